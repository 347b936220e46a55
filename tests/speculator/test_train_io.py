"""Eval splits: per source held-out, the copied-answer group, and the train sample."""

from __future__ import annotations

from turnspec.speculator.data import Sample, copied_share
from turnspec.speculator.train_io import eval_splits


def _sample(i: int, split: str, source: str, prompt: list[int], answer: list[int]) -> Sample:
    return Sample(f"s{i}", split, source, tuple(prompt + answer), (0,) * len(prompt) + (1,) * len(answer))


def test_copied_share_counts_answer_tokens_inside_prompt_spans() -> None:
    prompt = [5, 6, 7, 8, 9, 10, 11]
    assert copied_share(_sample(0, "heldout", "tools", prompt, [6, 7, 8, 9, 1, 2])) == 4 / 6
    assert copied_share(_sample(0, "heldout", "tools", prompt, [6, 7, 8, 1, 2])) == 0.0  # 3 < n
    assert copied_share(_sample(0, "heldout", "tools", prompt, [5, 6, 7, 8, 9, 10, 11])) == 1.0
    assert copied_share(_sample(0, "heldout", "tools", prompt, [6, 7, 8, 1]), n=3) == 0.75


def test_eval_splits_add_the_copied_tool_turns() -> None:
    prompt = list(range(100, 120))
    copy, fresh = prompt[3:11], [1, 2, 3, 4, 5, 6, 7, 8]
    samples = [_sample(i, "heldout", "tools", prompt, copy if i % 3 == 0 else fresh) for i in range(9)]
    samples += [_sample(20 + i, "heldout", "generic", prompt, copy) for i in range(3)]
    samples += [_sample(40 + i, "train", "tools", prompt, copy) for i in range(5)]
    splits = eval_splits(samples, 4, with_train=True)
    assert set(splits) == {"tools-heldout", "tools-heldout-copied", "generic-heldout", "train-sample"}
    assert [s.id for s in splits["tools-heldout-copied"]] == ["s0", "s3", "s6"]
    assert len(splits["tools-heldout"]) == 4 and len(splits["train-sample"]) == 4
    no_copies = [s for s in samples if s.id not in ("s0", "s3", "s6")]
    assert "tools-heldout-copied" not in eval_splits(no_copies, 4)
