"""The drafter's model card (README.md), rendered from a training run's metrics.json."""

from __future__ import annotations

from datetime import date

from turnspec.engine.drafter.config import SMOLLM2_MASK_TOKEN_ID
from turnspec.speculator.tau import format_interval

_MASK_NOTE = (
    "SmolLM2 has no MASK token. Id 16 `<empty_output>` is one of the StarCoder-era specials "
    "(ids 3..16): the chat template never emits it and plain text never tokenizes to it, and its "
    "embedding row equals those of ids 5 and 7..15 (norm 3.2937, cosine 1.00), the signature of "
    "a row that never received a gradient in pretraining. The target therefore never sees or "
    "emits it, so a block's MASK slots cannot collide with a real token.")


def render_card(m: dict, commands: list[str] | None = None, when: date | None = None) -> str:
    d, c = m["drafter"], m["config"]
    dc = d["dflash_config"]
    lines = [
        f"# DFlash drafter for {c['model_dir'].rstrip('/').split('/')[-1]}",
        "",
        "A block-diffusion speculative drafter (DFlash, arXiv:2602.06036) in the z-lab / SGLang "
        "layout (`config.json` with `architectures: [\"DFlashDraftModel\"]`, `model.safetensors` "
        "without embedding or LM head: both are the target's, frozen). Load it with "
        "`turnspec.engine.drafter.load_drafter` or SGLang `--speculative-algorithm DFLASH`.",
        "",
        "| | |", "|---|---|",
        f"| layers | {d['num_hidden_layers']} ({', '.join(sorted(set(d['layer_types'])))}) |",
        f"| hidden / heads / kv heads / head dim | {d['hidden_size']} / "
        f"{d['num_attention_heads']} / {d['num_key_value_heads']} / {d['head_dim']} |",
        f"| intermediate | {d['intermediate_size']} |",
        f"| block size | {d['block_size']} |",
        f"| target layers tapped | {dc['target_layer_ids']} of {d['num_target_layers']} |",
        f"| mask token id | {dc['mask_token_id']} |",
        f"| parameters | {m['params'] / 1e6:.2f} M, stored {c['export_dtype']} |",
        "",
    ]
    if dc["mask_token_id"] == SMOLLM2_MASK_TOKEN_ID and d["vocab_size"] == 49152:
        lines += ["**MASK token.** " + _MASK_NOTE, ""]
    lines += ["## Data", "",
              "Prompts answered by the target itself (greedy, through the turnspec engine), "
              "loss on the response tokens only.", "",
              "| source-split | sequences | response tokens |", "|---|---|---|"]
    data = m.get("data", {})
    for name, cnt in data.get("counts", {}).items():
        lines.append(f"| {name} | {cnt['sequences']} | {cnt['response_tokens']} |")
    meta = data.get("datagen", {})
    if meta:
        # scalars only: lists (e.g. per-shard stats of a sharded datagen) stay in meta.json
        lines += ["", "Datagen: " + ", ".join(f"{k}={v}" for k, v in meta.items()
                                               if k != "model" and not isinstance(v, list))]
    lines += ["", "## Training", "",
              f"{m['steps']} steps ({m['epochs']} epochs) in {m['train_seconds']:.0f} s on "
              f"{m['device']}, {m['tokens_per_s']} target tokens/s. AdamW lr {c['lr']}, "
              f"warmup {c['warmup']}, cosine, weight decay {c['weight_decay']}, grad clip "
              f"{c['grad_clip']}; {c['batch_size']} sequences x {c['anchors']} random anchors "
              f"per step (re-drawn every time), CE on block slots 1..B-1 against same-position "
              f"labels, decay gamma {c['gamma'] or 'paper default'}; max length {c['max_len']}."
              + (f" Weights started from the drafter `{c['init_from']}` (fresh optimizer)."
                 if c.get("init_from") else ""),
              "", "## Acceptance (tau)", "",
              "Offline greedy replay on target-generated text, identical to online greedy "
              f"acceptance (tokens per verify step, bonus included), block {d['block_size']}:", "",
              "| split | tau | 90% CI (bootstrap over turns) | steps | samples |",
              "|---|---|---|---|---|"]
    for name, r in m["eval"].items():
        lines.append(f"| {name} | {r['tau']:.3f} | {format_interval(r.get('ci90'))} | "
                     f"{r['steps']} | {r['samples']} |")
    if commands:
        lines += ["", "## Reproduce", "", "```"] + commands + ["```"]
    lines += ["", f"Card written {(when or date.today()).isoformat()} from the run's "
              "metrics.json.", ""]
    return "\n".join(lines)
