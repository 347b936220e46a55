"""scripts/gpu/near_ties.py: where a speculative run parts from the run without speculation,
and whether the target's own top two logits there are a near-tie, with the real SmolLM2 (fp32 on
the CPU here; bf16 on the GPU) on the independent set's real prompts."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts/gpu"))
spec = importlib.util.spec_from_file_location("near_ties", ROOT / "scripts/gpu/near_ties.py")
near_ties = importlib.util.module_from_spec(spec)
spec.loader.exec_module(near_ties)


@pytest.fixture(scope="module")
def model(smollm2_dir: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()


def test_first_split() -> None:
    assert near_ties.first_split([1, 2, 3], [1, 2, 3]) is None
    assert near_ties.first_split([1, 2, 3], [1, 5, 3]) == 1
    assert near_ties.first_split([1, 2, 3], [1, 2]) == 2   # one answer ended early


def ranked(model, ids: list[int]) -> list[int]:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].argsort(descending=True).tolist()


def test_a_turn_parting_below_the_top_is_judged_by_the_gap(model, smollm2_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    prompt = list(tok.apply_chat_template([{"role": "user", "content": "Name a colour."}],
                                          add_generation_prompt=True, tokenize=True, return_dict=False))
    ref = [ranked(model, prompt)[0]]
    ref.append(ranked(model, prompt + ref)[0])
    order = ranked(model, prompt + ref)
    ref.append(order[0])
    second = near_ties.judge(prompt, ref, ref[:2] + [order[1]], model)
    assert second["at"] == 2 and second["chosen"] == [order[0], order[1]]
    assert second["top2"] == order[:2] and second["logits"][0] >= second["logits"][1]
    assert second["near_tie"] == (second["gap"] <= near_ties.NEAR)
    third = near_ties.judge(prompt, ref, ref[:2] + [order[2]], model)  # a three-way tie counts
    assert third["top2"] == order[:2] and third["gap"] >= second["gap"]
    assert third["near_tie"] == (third["gap"] <= near_ties.NEAR)
    far = near_ties.judge(prompt, ref, ref[:2] + [order[-1]], model)  # the least likely token
    assert far["gap"] > near_ties.NEAR and not far["near_tie"]
    ended = near_ties.judge(prompt, ref, ref[:2], model)  # one answer stopped where one went on
    assert ended["chosen"] == [order[0], None] and not ended["near_tie"]
    assert near_ties.judge(prompt, ref, list(ref), model) is None


def test_check_reads_a_run_folder(model, tmp_path: Path) -> None:
    todo = near_ties.turns(1)
    rows = [{"split": split, "id": sid, "output_ids": [1, 2, 3, 4]} for split, sid, _ in todo]
    (tmp_path / "none.json").write_text(json.dumps({"rows": rows}))
    parted = [dict(r, output_ids=[1, 2, 9, 4]) if i == 0 else r for i, r in enumerate(rows)]
    (tmp_path / "stock.json").write_text(json.dumps({"rows": parted}))
    found = near_ties.check(tmp_path, model)
    assert list(found) == ["stock"] and [r["id"] for r in found["stock"]] == [todo[0][1]]
    assert found["stock"][0]["at"] == 2 and found["stock"][0]["chosen"] == [3, 9]


def test_beyond_names_the_misses_stock_does_not_share() -> None:
    """On the H100 run's verdicts (committed): every miss of the device plan is one of stock's;
    trees add two."""
    found = json.loads((ROOT / "docs/gpu-runs/2026-12-06-trees/plugin-check/near-ties.json")
                       .read_text())
    assert near_ties.beyond(found, "device") == []
    assert sorted(near_ties.beyond(found, "trees")) == ["indep-bank-italy_trip_notice:8",
                                                        "indep-generic-060:2"]
    assert near_ties.beyond(found, "stock") == []
