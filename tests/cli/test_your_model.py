"""docs/your-model.md's chain on the CPU, through the console script's commands: a randomly
initialised Qwen3-shaped target (an HF folder with a Qwen3-style chat template that renders
tools natively) and a drafter folder as z-lab publishes them (config keys of z-lab's
Qwen3-*-DFlash-b16 config.json, bf16 safetensors under z-lab's names) go through
`speculator datagen` (embedded engine), `train --init-from`, `eval` and `export`; the
exported drafter then loads back into a server whose greedy turn over HTTP is the same with
the drafter as without it (speculation ran: verify steps > 0)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer

from tests.server.srv_helpers import start_server
from turnspec.cli.main import main
from turnspec.engine.drafter.config import build_target_layer_ids
from turnspec.engine.drafter.folder import read_drafter
from turnspec.workloads import generic_prompts

VOCAB = 49152  # SmolLM2's tokenizer, borrowed (no hub here); the target pads past it, as
MASK = VOCAB   # Qwen3 does (151669 tokens, vocab_size 151936, z-lab's mask id 151669)
LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 8, 64, 4, 2, 16, 128
BLOCK = 8
NEW_TOKENS = 24  # datagen's answers, and the served turn
# Qwen3's ChatML, tools rendered in the system turn, calls as <tool_call> JSON, results as
# <tool_response> in a user turn (the shape of Qwen3's own template, without its thinking part)
QWEN3_TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>

For each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'user' %}<|im_start|>user
{{ m.content }}<|im_end|>
{% elif m.role == 'assistant' %}<|im_start|>assistant
{{ m.content or '' }}
{%- for tc in m.tool_calls or [] %}{% set f = tc.function if tc.function is defined else tc %}
<tool_call>
{"name": "{{ f.name }}", "arguments": {{ f.arguments if f.arguments is string \
else f.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% elif m.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user{% endif %}
<tool_response>
{{ m.content }}
</tool_response>
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>
{% endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def make_qwen3_target(out: Path, tokenizer_dir: Path) -> Path:
    """A random Qwen3ForCausalLM folder (q/k-norm, head_dim apart from hidden/heads, untied
    LM head, padded vocab) with SmolLM2's tokenizer and a Qwen3-style template."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=VOCAB + 64, hidden_size=HIDDEN, intermediate_size=FFN,
                      num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                      num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
                      max_position_embeddings=4096, rope_theta=1000000.0, rms_norm_eps=1e-6,
                      tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3) if p.dim() > 1 else p.uniform_(0.5, 1.5)
        # padded ids (the MASK among them) get logit 0, never the greedy pick against
        # 49,152 random logits of std ~2.4, as an unused embedding row never is
        model.lm_head.weight[VOCAB:] = 0.0
        model.lm_head.weight[2] *= 0.05  # rare <|im_end|>: answers run long enough to draft
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, out / name)
    (out / "chat_template.jinja").write_text(QWEN3_TEMPLATE)
    return out


def make_zlab_drafter(out: Path, num_layers: int = 1) -> Path:
    """A drafter folder for the tiny target in z-lab's published layout: the keys of z-lab's
    Qwen3-*-DFlash-b16 config.json and its safetensors names, bf16, random weights."""
    ids = list(build_target_layer_ids(LAYERS, 5))  # z-lab's rule: five taps, 2nd..3rd-last
    config = {
        "architectures": ["DFlashDraftModel"], "attention_bias": False,
        "attention_dropout": 0.0, "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
        "block_size": BLOCK, "bos_token_id": 1,
        "dflash_config": {"mask_token_id": MASK, "target_layer_ids": ids},
        "dtype": "bfloat16", "eos_token_id": 2, "head_dim": HEAD_DIM, "hidden_act": "silu",
        "hidden_size": HIDDEN, "initializer_range": 0.02, "intermediate_size": FFN,
        "layer_types": ["full_attention"] * num_layers, "max_position_embeddings": 4096,
        "max_window_layers": num_layers, "model_type": "qwen3",
        "num_attention_heads": HEADS, "num_hidden_layers": num_layers,
        "num_key_value_heads": KV_HEADS, "num_target_layers": LAYERS, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": False, "transformers_version": "4.57.1", "use_cache": True,
        "use_sliding_window": False, "vocab_size": VOCAB + 64}
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    shapes = {"fc.weight": (HIDDEN, len(ids) * HIDDEN), "hidden_norm.weight": (HIDDEN,),
              "norm.weight": (HIDDEN,)}
    for i in range(num_layers):
        shapes |= {f"layers.{i}.{k}": s for k, s in {
            "self_attn.q_proj.weight": (q, HIDDEN), "self_attn.k_proj.weight": (kv, HIDDEN),
            "self_attn.v_proj.weight": (kv, HIDDEN), "self_attn.o_proj.weight": (HIDDEN, q),
            "self_attn.q_norm.weight": (HEAD_DIM,), "self_attn.k_norm.weight": (HEAD_DIM,),
            "mlp.gate_proj.weight": (FFN, HIDDEN), "mlp.up_proj.weight": (FFN, HIDDEN),
            "mlp.down_proj.weight": (HIDDEN, FFN), "input_layernorm.weight": (HIDDEN,),
            "post_attention_layernorm.weight": (HIDDEN,)}.items()}
    g = torch.Generator().manual_seed(1)
    tensors = {k: (torch.randn(s, generator=g) * 0.05 if len(s) > 1 else torch.ones(s))
               .to(torch.bfloat16) for k, s in shapes.items()}
    out.mkdir(parents=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def _served_turn(target: Path, speculator: str, messages: list[dict]) -> dict:
    """One greedy HTTP turn from a server on `target` with `speculator`."""
    import urllib.request

    from turnspec.engine.local import LocalEngine, LocalEngineConfig

    engine = LocalEngine(LocalEngineConfig(
        model_dir=str(target), speculator=speculator, spec_policy="always",
        spec_min_confidence=0.0, spec_lookup=False, max_batch=2, max_context=2048,
        kv_memory_gb=0.05, threads=1))
    srv = start_server(engine)
    try:
        body = json.dumps({"messages": messages, "max_tokens": NEW_TOKENS,
                           "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{srv.port}/v1/chat/completions",
                                     data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())
    finally:
        srv.stop()
        asyncio.run(engine.shutdown())


@pytest.mark.slow
def test_your_model_chain(smollm2_dir, tmp_path, capsys):
    target = make_qwen3_target(tmp_path / "Qwen3-tiny", smollm2_dir)
    zlab = make_zlab_drafter(tmp_path / "Qwen3-tiny-DFlash-b8")
    data, run, exported = tmp_path / "data", tmp_path / "run", tmp_path / "my-drafter"
    model = ["--model", str(target), "--device", "cpu"]

    assert main(["speculator", "datagen", "--out", str(data), *model, "--speculator", "none",
                 "--tool-conversations", "3", "--heldout-conversations", "2", "--generic",
                 "6", "--max-new-tokens", str(NEW_TOKENS), "--no-progress", "--kv-memory-gb",
                 "0.2"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    samples = {s["id"]: s for s in map(json.loads, (data / "samples.jsonl").open())}
    assert stats["written"] == len(samples) >= 20
    assert {s["split"] for s in samples.values()} == {"train", "heldout"}
    # the target's own template rendered the tool turns (tools in its system turn)
    tools = next(s for s in samples.values() if s["source"] == "tools")
    text = AutoTokenizer.from_pretrained(target).decode(tools["input_ids"])
    assert "# Tools" in text and "<tools>" in text and "<tool_call>" in text

    assert main(["speculator", "train", "--data", str(data), "--out", str(run), *model,
                 "--init-from", str(zlab), "--layers", "1", "--block-size", str(BLOCK),
                 "--taps", "5", "--mask-token-id", str(MASK), "--batch-size", "4",
                 "--anchors", "8", "--max-steps", "150", "--epochs", "1000", "--lr", "3e-3",
                 "--log-every", "50", "--final-eval-samples", "4", "--max-len", "1024",
                 "--export-dtype", "float32", "--no-progress"]) == 0
    trained = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert trained["steps"] == 150 and f"weights from {zlab}" in (run / "train.log").read_text()

    ev = tmp_path / "eval.json"
    assert main(["speculator", "eval", "--data", str(data), *model, "--drafter",
                 str(run / "drafter"), "--samples", "8", "--with-train", "--json", str(ev)]) == 0
    taus = json.loads(ev.read_text())["tau"]
    # 150 steps on ~7 short answers: the drafter learns the answers it saw (no more)
    assert taus["train-sample"] > 1.0 and all(1.0 <= t <= BLOCK for t in taus.values())

    assert main(["speculator", "export", "--checkpoint", str(run), "--out", str(exported),
                 "--dtype", "bfloat16"]) == 0
    capsys.readouterr()
    cfg = json.loads((exported / "config.json").read_text())
    zcfg = json.loads((zlab / "config.json").read_text())
    # every key a loader reads from z-lab's config, with z-lab's values for this target
    for key in ("architectures", "model_type", "block_size", "num_target_layers",
                "hidden_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
                "rms_norm_eps", "layer_types", "use_sliding_window", "sliding_window",
                "dflash_config"):
        assert cfg[key] == zcfg[key], key
    back = read_drafter(exported)
    assert back.fc.weight.dtype == torch.bfloat16 and back.config.mask_token_id == MASK
    assert not torch.equal(back.fc.weight, read_drafter(zlab).fc.weight)  # it trained

    # a turn the drafter trained on (generic-0000, a train sample): it drafts, the target
    # accepts some drafts, and the answer is the target's own, token for token
    assert samples["generic-0000"]["split"] == "train"
    (prompt,) = (c.messages for c in generic_prompts(1))
    plain = _served_turn(target, "none", prompt)
    spec = _served_turn(target, str(exported), prompt)
    assert spec["choices"][0]["message"] == plain["choices"][0]["message"]  # lossless
    assert spec["usage"]["completion_tokens"] == plain["usage"]["completion_tokens"] \
        == NEW_TOKENS
    stats = spec["turnspec"]["spec"]
    assert stats["verify_steps"] > 0 and stats["accepted_tokens"] > 0, stats
    assert plain["turnspec"]["spec"] is None
