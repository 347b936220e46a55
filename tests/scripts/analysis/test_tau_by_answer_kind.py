"""scripts/analysis/tau_by_answer_kind.py: per-turn τ rows split by what the target answered."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from turnspec.speculator.data import Sample

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts/analysis/tau_by_answer_kind.py"
spec = importlib.util.spec_from_file_location("tau_by_answer_kind", SCRIPT)
kinds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kinds)

ANSWERS = {   # answer -> kind, as SmolLM2 wrote them on the independent set
    '<tool_call>\n{"name":"verify_policy","arguments":{"policy_number":"KM-44"}}\n</tool_call>':
        "tool call",
    '<tool_response>\n{"verified":true,"member":"Andre Whitaker"}\n</tool_response>':
        "invents a tool result",
    'You can call the function "reserve_car" to find the pickup location.': "talks about calling",
    "Your bag is on flight four eighteen, landing tonight at nine forty.": "spoken",
}


def test_answer_kinds():
    for answer, kind in ANSWERS.items():
        assert kinds.answer_kind(answer) == kind, answer


def test_rows_split_by_kind_and_refused_out_of_order(smollm2_dir, tmp_path):
    """Rows in eval's order (spread, then by length) are split by kind with τ = tokens / steps
    per kind; the same rows in another order are refused, not misattributed."""
    from turnspec.engine.chat import ChatTemplate

    chat = ChatTemplate.from_model_dir(smollm2_dir)
    samples = []
    for i, answer in enumerate([*ANSWERS, "Sure thing."]):
        prompt = chat.render([{"role": "system", "content": "You are a voice agent." + " x" * i},
                              {"role": "user", "content": "hi, um, my bag did not come"}])
        ids = chat.encode(answer)
        samples.append(Sample(f"indep-t{i}:0", "heldout", "independent-voice", tuple(prompt + ids),
                              (0,) * len(prompt) + (1,) * len(ids)))
    (tmp_path / "s.jsonl").write_text("".join(s.to_json() + "\n" for s in samples))
    turns = kinds.ordered(samples, "independent-voice", 512)
    assert len(turns) == 5 and [len(s.input_ids) for s in turns] == sorted(len(s.input_ids) for s in samples)
    assert kinds.ordered(samples, "independent-voice+lookup", 512) == turns  # eval --lookup's rows
    rows = [[len(s.input_ids) - s.prompt_len, 2 + i] for i, s in enumerate(turns)]
    tau = {"by_block": {"16": {"eval": {"independent-voice": {"samples": 5, "rows": rows}}}}}
    (tmp_path / "tau.json").write_text(json.dumps(tau))
    run = [sys.executable, str(SCRIPT), str(tmp_path / "s.jsonl"), str(tmp_path / "tau.json"),
           "--model", str(smollm2_dir), "--json", str(tmp_path / "out.json")]
    out = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads((tmp_path / "out.json").read_text())[str(tmp_path / "tau.json")]
    assert got["all"]["turns"] == 5 and got["spoken"]["turns"] == 2
    assert got["tool call"]["turns"] == got["invents a tool result"]["turns"] == 1
    t, st = next((r for s, r in zip(turns, rows, strict=True) if kinds.answer_kind(
        chat.tokenizer.decode(list(s.input_ids[s.prompt_len:]))) == "tool call"))
    assert got["tool call"]["tau"] == round(t / st, 3)
    tau["by_block"]["16"]["eval"]["independent-voice"]["rows"] = rows[::-1]
    (tmp_path / "tau.json").write_text(json.dumps(tau))
    out = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "not in this order" in out.stderr


def test_probe_answers_generator_turns_and_counts_them(smollm2_dir):
    """scripts/analysis/answer_kinds_probe.py on the real model: every answered turn is counted
    under one kind."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts/analysis/answer_kinds_probe.py"),
                          "--prompts", "3", "--max-new-tokens", "6", "--model", str(smollm2_dir),
                          "--threads", "1"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("3 held-out tool turns")
    counted = [line.split() for line in lines[1:] if not line.strip().startswith("e.g.")]
    assert sum(int(parts[-2]) for parts in counted) == 3
