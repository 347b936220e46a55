from __future__ import annotations

import pytest
import torch

from turnspec.speculator.data import PackedSplit, Sample, read_samples
from turnspec.speculator.datagen import PromptItem, batch_plan, conversation_key, generate_dataset


def _items(n: int) -> list[PromptItem]:
    return [PromptItem(f"q{i}", "train" if i % 3 else "heldout", "tools",
                       tuple(range(10, 10 + 2 + i % 4))) for i in range(n)]


def _answer(calls: list[int]):
    def answer(prompts: list[list[int]]) -> list[list[int]]:
        calls.append(len(prompts))
        return [[p[-1] + 1, p[-1] + 2, 2] for p in prompts]              # ... + EOS
    return answer


def test_records_masks_and_resume(tmp_path):
    calls: list[int] = []
    stats = generate_dataset(_items(7), _answer(calls), tmp_path, batch_size=3, progress=False)
    assert stats["written"] == 7 and sorted(calls) == [1, 3, 3]
    samples = {s.id: s for s in read_samples(tmp_path)}
    s = samples["q1"]                                                    # prompt 10, 11, 12
    assert s.input_ids == (10, 11, 12, 13, 14, 2)
    assert s.loss_mask == (0, 0, 0, 1, 1, 1) and s.prompt_len == 3 and s.split == "train"
    # a run killed mid-write: torn last line; the resumed run answers only what is missing
    path = tmp_path / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:4]) + lines[4][:10])
    calls.clear()
    stats = generate_dataset(_items(9), _answer(calls), tmp_path, batch_size=8, progress=False)
    assert stats["skipped_done"] == 4 and stats["written"] == 5 and sum(calls) == 5
    assert sorted(s.id for s in read_samples(tmp_path)) == sorted(f"q{i}" for i in range(9))


def test_answer_contract_is_checked(tmp_path):
    with pytest.raises(ValueError, match="one per prompt"):
        generate_dataset(_items(3)[1:], lambda ps: [[1]], tmp_path, progress=False)
    with pytest.raises(ValueError, match="unique"):
        generate_dataset(_items(2) * 2, _answer([]), tmp_path, progress=False)
    with pytest.raises(ValueError, match="split"):
        PromptItem("x", "test", "tools", (1,))
    with pytest.raises(ValueError, match="only 0/1"):
        Sample("x", "train", "tools", (1, 2, 3), (0, 1, 2))


def test_packed_split_truncates_right_and_batches_by_length(tmp_path):
    generate_dataset(_items(30), _answer([]), tmp_path, batch_size=30, progress=False)
    packed = PackedSplit.build(read_samples(tmp_path), max_len=6, device="cpu")
    # prompts of 5 tokens keep 1 response token: dropped; prompts of 4 keep 2: truncated
    assert packed.ids.shape == (23, 6) and packed.truncated == 7
    row = packed.lengths.index(5)                                        # prompt 10, 11
    assert packed.ids[row].tolist() == [10, 11, 12, 13, 2, 0]
    assert packed.loss_mask[row].tolist() == [False, False, True, True, True, False]
    kept = [s for s in read_samples(tmp_path) if sum(s.loss_mask[:6]) >= 2]
    for i, s in enumerate(kept):                                        # every row, every slot
        n = min(len(s.input_ids), 6)
        assert packed.ids[i].tolist() == list(s.input_ids[:n]) + [0] * (6 - n)
        assert packed.loss_mask[i].tolist() == [bool(m) for m in s.loss_mask[:n]] + [False] * (6 - n)
        on = [j for j, m in enumerate(s.loss_mask[:n]) if m]
        assert packed.spans[i] == on[-1] - on[0] + 1
    seen = []
    for rows, width, tokens, span in packed.batches(4, torch.Generator().manual_seed(0)):
        lens = [packed.lengths[i] for i in rows.tolist()]
        assert width == max(lens) and tokens == sum(lens)
        assert span == max(packed.spans[i] for i in rows.tolist())
        seen += rows.tolist()
    assert sorted(seen) == list(range(23))
    # widths rounded up to a multiple (capped at the packed width), same rows in the same order
    plain = list(packed.batches(4, torch.Generator().manual_seed(0)))
    wide = list(packed.batches(4, torch.Generator().manual_seed(0), width_multiple=8))
    assert [b.rows.tolist() for b in wide] == [b.rows.tolist() for b in plain]
    assert [b.width for b in wide] == [min(-(-b.width // 8) * 8, packed.ids.shape[1])
                                       for b in plain]
    assert any(w.width > p.width for w, p in zip(wide, plain, strict=True))
    with pytest.raises(ValueError, match="width_multiple: expected >= 1"):
        next(packed.batches(4, torch.Generator(), width_multiple=0))


def test_time_budget_stops_between_batches(tmp_path):
    calls: list[int] = []
    stats = generate_dataset(_items(9), _answer(calls), tmp_path, batch_size=2, progress=False,
                             time_budget_s=0.0)
    assert len(calls) == 1 and stats["written"] == calls[0]            # the first batch only
    stats = generate_dataset(_items(9), _answer(calls), tmp_path, batch_size=2, progress=False)
    assert stats["skipped_done"] == calls[0] and stats["written"] == 9 - calls[0]


def test_batch_plan_is_stratified_by_source_and_split():
    items = [PromptItem(f"t{i}", "train", "tools", (1,) * (1 + i % 7)) for i in range(400)]
    items += [PromptItem(f"h{i}", "heldout", "tools", (1,) * (1 + i % 5)) for i in range(40)]
    items += [PromptItem(f"g{i}", "train", "generic", (2,)) for i in range(6)]
    plan = batch_plan(items, 8, seed=3)
    assert sorted(it.id for b in plan for it in b) == sorted(it.id for it in items)
    group = [(b[0].source, b[0].split) for b in plan]
    assert all(len({(it.source, it.split) for it in b}) == 1 for b in plan)
    assert set(group[:3]) == {("tools", "train"), ("tools", "heldout"), ("generic", "train")}
    for cut in range(3, len(plan), 5):                        # any prefix: shares in proportion
        done = group[:cut].count(("tools", "heldout")) / 5
        assert abs(done - group[:cut].count(("tools", "train")) / 50) <= 0.2 + 1e-9
    assert [len(it.prompt_ids) for it in plan[group.index(("tools", "train"))]] == [
        len(it.prompt_ids) for it in sorted(plan[group.index(("tools", "train"))],
                                            key=lambda it: len(it.prompt_ids))]
    assert plan == batch_plan(items, 8, seed=3) and plan != batch_plan(items, 8, seed=4)
    with pytest.raises(ValueError, match="batch_size"):
        batch_plan(items, 0)


def test_batch_plan_keeps_a_conversation_in_one_batch():
    # 30 calls of 2-6 turns; turn k+1's prompt is longer than turn k's, calls differ in length
    items = [PromptItem(f"c{c}:{k}", "train", "synthetic", (1,) * (50 * (c % 7) + 10 * k + 5))
             for c in range(30) for k in range(1, 2 + c % 5)]
    items.append(PromptItem("c3:readback:4", "train", "synthetic", (1,) * 500))
    items.append(PromptItem("solo", "train", "synthetic", (2,) * 3))
    plan = batch_plan(items, 8, seed=1)
    assert sorted(it.id for b in plan for it in b) == sorted(it.id for it in items)
    assert all(len(b) <= 8 for b in plan) and len(plan) <= len(items) // 4
    where = {it.id: i for i, b in enumerate(plan) for it in b}
    for c in range(30):
        assert len({where[it.id] for it in items if conversation_key(it.id) == f"c{c}"}) == 1, c
    for b in plan:                 # in waves: all first turns (by length), then all second, ...
        turn = [sorted(len(x.prompt_ids) for x in b if conversation_key(x.id) == conversation_key(it.id))
                .index(len(it.prompt_ids)) for it in b]
        assert turn == sorted(turn)
        for t in set(turn):
            wave = [len(it.prompt_ids) for it, k in zip(b, turn, strict=True) if k == t]
            assert wave == sorted(wave)
    big = [PromptItem(f"long:{k}", "train", "tools", (1,) * (k + 1)) for k in range(20)]
    assert sorted(len(b) for b in batch_plan(big, 8)) == [4, 8, 8]  # a call longer than a batch


def _stream(pulled: list[int], hold: int = 3):
    """A stream that answers like _answer, `hold` prompts in flight, in reverse finishing order
    (as an engine finishes short answers first): what generate_dataset must not rely on."""
    def stream(prompts):
        buf: list[tuple[int, list[int]]] = []
        for i, p in enumerate(prompts):
            pulled.append(i)
            buf.append((i, [p[-1] + 1, p[-1] + 2, 2]))
            if len(buf) == hold:
                yield from reversed(buf)
                buf = []
        yield from reversed(buf)
    return stream


def test_stream_writes_what_batches_write(tmp_path):
    generate_dataset(_items(11), _answer([]), tmp_path / "b", batch_size=4, progress=False)
    pulled: list[int] = []
    stats = generate_dataset(_items(11), None, tmp_path / "s", batch_size=4, progress=False,
                             stream=_stream(pulled))
    assert stats["written"] == 11 and stats["feed"] == "stream" and pulled == list(range(11))
    by_id = lambda d: {s.id: (s.input_ids, s.loss_mask, s.split) for s in read_samples(d)}  # noqa: E731
    assert by_id(tmp_path / "s") == by_id(tmp_path / "b")
    with pytest.raises(ValueError, match="exactly one"):
        generate_dataset(_items(3), _answer([]), tmp_path / "x", progress=False, stream=_stream([]))


def test_stream_budget_stops_pulling_and_keeps_what_finished(tmp_path):
    pulled: list[int] = []
    stats = generate_dataset(_items(9), None, tmp_path, progress=False, time_budget_s=0.0,
                             stream=_stream(pulled))
    assert pulled == [0] and stats["written"] == 1                       # at least one prompt
    stats = generate_dataset(_items(9), None, tmp_path, progress=False, stream=_stream([]))
    assert stats["skipped_done"] == 1 and stats["written"] == 8

    def twice(prompts):
        for i, p in enumerate(prompts):
            yield i, [p[-1], 2]
            yield i, [p[-1], 2]
    with pytest.raises(ValueError, match="once"):
        generate_dataset(_items(4), None, tmp_path / "t", progress=False, stream=twice)
    assert len(read_samples(tmp_path / "t")) == 1                        # finished work is kept


def test_later_parts_are_answered_in_turn_and_never_awaited_past_the_budget(tmp_path):
    """A datagen answers part 0 while the rest render: each later part is planned and answered
    after the one before it, in both feeds, and a run out of budget does not wait for the
    next part (the renderer may still be busy with it)."""
    items = _items(12)
    taken: list[int] = []

    def parts():
        for k in (1, 2):
            taken.append(k)
            yield items[4 * k: 4 * k + 4]

    pulled: list[int] = []
    stats = generate_dataset(items[:4], None, tmp_path / "s", batch_size=4, progress=False,
                             stream=_stream(pulled), more=parts(), meta={"run": 1})
    assert stats["prompts"] == stats["written"] == 12 and taken == [1, 2]
    assert pulled == list(range(12))
    assert sorted(s.id for s in read_samples(tmp_path / "s")) == sorted(it.id for it in items)
    assert (tmp_path / "s" / "meta.json").read_text().count('"prompts": 12') == 1
    calls: list[int] = []
    stats = generate_dataset(items[:4], _answer(calls), tmp_path / "b", batch_size=4,
                             progress=False, more=[items[4:8], items[8:]])
    assert stats["written"] == 12 and sum(calls) == 12
    part_of = {it.id: k // 4 for k, it in enumerate(items)}
    order = [part_of[smp.id] for smp in read_samples(tmp_path / "b")]     # as written
    assert order == sorted(order)                                        # part by part

    def never():
        raise AssertionError("a part was awaited after the budget ran out")
        yield
    for k, feed in enumerate(({"stream": _stream([])}, {"answer": _answer([])})):
        stats = generate_dataset(items[:4], feed.get("answer"), tmp_path / f"t{k}",
                                 progress=False, time_budget_s=0.0, more=never(),
                                 stream=feed.get("stream"))
        assert stats["prompts"] == 4 and 1 <= stats["written"] <= 4
    with pytest.raises(ValueError, match="unique"):
        generate_dataset(items[:4], _answer([]), tmp_path / "u", progress=False,
                         more=[items[3:5]])
