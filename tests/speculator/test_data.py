"""Sample.to_json writes the bytes json.dumps did (datagen files and rebuilds are compared and
concatenated across sessions), and reads back."""

from __future__ import annotations

import json
import random

from turnspec.speculator.data import Sample, join_ints


def test_to_json_is_json_dumps_byte_for_byte():
    rng = random.Random(0)
    ids = tuple(rng.randrange(49152) for _ in range(300))
    for sid, source in (("conv-3:2", "tools"), ('quo"te\\ünï 🎙️', "synthetic"), ("x", "generic")):
        s = Sample(sid, "train", source, ids, (0,) * 200 + (1,) * 100)
        want = json.dumps({"id": s.id, "split": s.split, "source": s.source,
                           "input_ids": list(s.input_ids), "loss_mask": list(s.loss_mask)},
                          separators=(",", ":"))
        assert s.to_json() == want
        assert Sample.from_json(s.to_json()) == s
    empty = Sample("e", "heldout", "tools", (), ())
    assert json.loads(empty.to_json())["input_ids"] == []


def test_join_ints_is_str_join_for_any_int():
    rng = random.Random(1)
    cases = [tuple(rng.randrange(151_936) for _ in range(500)), (), (0,), [7, 1 << 18, 3],
             (5, -2, 9), (2**40,)]
    for values in cases:
        for sep in (",", ", "):
            assert join_ints(sep, values) == sep.join(map(str, values))
    assert join_ints(",", iter([3, 1 << 20])) == "3,1048576"   # a one-pass iterable, past the table
