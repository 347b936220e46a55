"""Packed completions rebuild into the same samples from the workload; drift is an error."""

from __future__ import annotations

import gzip
import json

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.speculator.data import open_text, read_samples
from turnspec.speculator.datagen import generate_dataset
from turnspec.speculator.prompts import build_prompt_items
from turnspec.speculator.responses import BUILD_KEYS, pack_responses, unpack_responses


def _datagen(tmp_path, chat):
    build = {"tool_conversations": 3, "heldout_conversations": 2, "generic": 6,
             "generic_heldout_frac": 0.3, "max_prompt_tokens": 4096, "seed": 4,
             "readback_frac": 0.5, "dictation_frac": 0.5, "synthetic_conversations": 2,
             "synthetic_heldout": 1, "workload": 2}
    items, _ = build_prompt_items(chat.render_many, **build)
    assert {it.source for it in items} == {"tools", "generic", "readback", "dictation", "synthetic"}
    # completions stand in for the target's: pack/unpack only move token ids around
    answer = lambda prompts: [[len(p) % 97, 13, 2] for p in prompts]  # noqa: E731
    generate_dataset(items[1:], answer, tmp_path / "data", progress=False, meta=dict(build))
    return build, read_samples(tmp_path / "data")


@pytest.mark.parametrize("suffix", [".gz", ".xz"])
def test_pack_then_unpack_gives_back_the_samples(tmp_path, smollm2_dir, suffix):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    build, samples = _datagen(tmp_path, chat)
    packed = pack_responses(tmp_path / "data", tmp_path / f"r.jsonl{suffix}")
    assert packed["samples"] == len(samples) and packed["response_tokens"] == 3 * len(samples)
    magic = (tmp_path / f"r.jsonl{suffix}").read_bytes()[:6]
    assert magic.startswith(b"\x1f\x8b" if suffix == ".gz" else b"\xfd7zXZ")
    unpack_responses(tmp_path / f"r.jsonl{suffix}", chat.render_many, tmp_path / "again")
    assert read_samples(tmp_path / "again") == samples
    with open_text(tmp_path / f"held.jsonl{suffix}", "wt") as f:  # committed held-out turns
        f.write((tmp_path / "again" / "samples.jsonl").read_text())
    assert read_samples(tmp_path / f"held.jsonl{suffix}") == samples
    meta = json.loads((tmp_path / "again" / "meta.json").read_text())
    assert {k: meta[k] for k in BUILD_KEYS} == build


def test_a_changed_workload_is_an_error(tmp_path, smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    _datagen(tmp_path, chat)
    pack_responses(tmp_path / "data", tmp_path / "r.jsonl.gz")
    with gzip.open(tmp_path / "r.jsonl.gz", "rt") as f:
        lines = f.readlines()
    head = json.loads(lines[0])
    head["build"]["seed"] = 5                      # other conversations under the same ids
    with gzip.open(tmp_path / "bad.jsonl.gz", "wt") as f:
        f.writelines([json.dumps(head) + "\n", *lines[1:]])
    with pytest.raises(ValueError, match="does not rebuild"):
        unpack_responses(tmp_path / "bad.jsonl.gz", chat.render_many, tmp_path / "x")


def test_pack_needs_the_datagen_arguments(tmp_path, smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    _datagen(tmp_path, chat)
    meta = json.loads((tmp_path / "data" / "meta.json").read_text())
    del meta["readback_frac"]
    (tmp_path / "data" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="readback_frac"):
        pack_responses(tmp_path / "data", tmp_path / "r.jsonl.gz")


def test_pack_and_unpack_commands(tmp_path, smollm2_dir, capsys):
    from tests.cli.test_speculator import _run

    def run(*argv: str) -> dict:
        assert _run(*argv) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    _, samples = _datagen(tmp_path, ChatTemplate.from_model_dir(smollm2_dir))
    packed = run("speculator", "pack-responses", "--data", str(tmp_path / "data"),
                 "--out", str(tmp_path / "r.jsonl.gz"))
    assert packed["samples"] == len(samples)
    assert run("speculator", "unpack-responses", "--responses", str(tmp_path / "r.jsonl.gz"),
               "--out", str(tmp_path / "again"), "--model", str(smollm2_dir))["samples"] == len(samples)
    assert read_samples(tmp_path / "again") == samples


def test_a_pack_from_before_dictation_still_rebuilds(tmp_path, smollm2_dir):
    """Packs written before `dictation_frac` and the synthetic counts existed carry no such
    keys: they rebuild with none."""
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    build = {"tool_conversations": 3, "heldout_conversations": 1, "generic": 2,
             "generic_heldout_frac": 0.3, "max_prompt_tokens": 4096, "seed": 2, "readback_frac": 0.5}
    items, _ = build_prompt_items(chat.render_many, **build, workload=1)  # the workload then
    generate_dataset(items, lambda ps: [[7, 2] for _ in ps], tmp_path / "data", progress=False,
                     meta=dict(build))
    pack_responses(tmp_path / "data", tmp_path / "r.jsonl.gz")
    with gzip.open(tmp_path / "r.jsonl.gz", "rt") as f:
        lines = f.read().splitlines()
    head = json.loads(lines[0])
    assert head["build"].pop("dictation_frac") == 0.0
    assert head["build"].pop("synthetic_conversations") == head["build"].pop("synthetic_heldout") == 0
    with gzip.open(tmp_path / "old.jsonl.gz", "wt") as f:
        f.write("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    unpack_responses(tmp_path / "old.jsonl.gz", chat.render_many, tmp_path / "again")
    assert read_samples(tmp_path / "again") == read_samples(tmp_path / "data")


def test_a_pack_from_before_workload_versions_rebuilds_with_workload_one(tmp_path, smollm2_dir):
    # seeds 7-9 were packed before the workload key existed, from workload 1's prompts
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    build = {"tool_conversations": 6, "heldout_conversations": 1, "generic": 0,
             "generic_heldout_frac": 0.2, "max_prompt_tokens": 4096, "seed": 9, "readback_frac": 0.0}
    items, _ = build_prompt_items(chat.render_many, **build, workload=1)
    latest, _ = build_prompt_items(chat.render_many, **build)
    assert [it.prompt_ids for it in items] != [it.prompt_ids for it in latest]  # so the check bites
    generate_dataset(items, lambda prompts: [[7, 2] for _ in prompts], tmp_path / "data",
                     progress=False, meta=dict(build))
    pack_responses(tmp_path / "data", tmp_path / "r.jsonl.gz")
    with gzip.open(tmp_path / "r.jsonl.gz", "rt") as f:
        head, *rest = f.readlines()
    assert json.loads(head)["build"].pop("workload") == 1
    old_head = json.loads(head)
    del old_head["build"]["workload"]                  # a header as the seed 7-9 packs have it
    with gzip.open(tmp_path / "old.jsonl.gz", "wt") as f:
        f.writelines([json.dumps(old_head) + "\n", *rest])
    for packed in ("r.jsonl.gz", "old.jsonl.gz"):
        unpack_responses(tmp_path / packed, chat.render_many, tmp_path / packed.split(".")[0])
        assert read_samples(tmp_path / packed.split(".")[0]) == read_samples(tmp_path / "data")


def test_prompt_hash_is_the_hash_the_committed_packs_were_written_with():
    import hashlib

    from turnspec.speculator.responses import prompt_hash

    for ids in ((), (7,), (1, 49151, 0, 16, 2) * 50):
        assert prompt_hash(ids) == hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()[:16]


def test_a_train_fraction_keeps_a_stable_share_of_train_and_all_heldout(tmp_path, smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    _, samples = _datagen(tmp_path, chat)
    pack_responses(tmp_path / "data", tmp_path / "r.jsonl.xz")
    full = {s.id: s for s in samples}
    kept = {}
    for seed in (0, 1):
        out = tmp_path / f"half{seed}"
        got = unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, out, 0.5, seed)
        kept[seed] = read_samples(out)
        assert got["samples"] == len(kept[seed])
        assert all(full[s.id] == s for s in kept[seed])           # the same samples, a subset
        assert {s.id for s in kept[seed] if s.split == "heldout"} == \
            {s.id for s in samples if s.split == "heldout"}
        n_train = sum(s.split == "train" for s in kept[seed])
        assert 0 < n_train < sum(s.split == "train" for s in samples)
        assert json.loads((out / "meta.json").read_text())["train_fraction"] == 0.5
    assert {s.id for s in kept[0]} != {s.id for s in kept[1]}     # another seed, another share
    again = unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, tmp_path / "x", 0.5, 0)
    assert again["samples"] == len(kept[0])
    with pytest.raises(ValueError, match="train_fraction"):
        unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, tmp_path / "y", 0.0)


def _conversations(path, lines):
    """Magpie-style conversation records (each ends with the user's line), one .jsonl.xz file as
    kept under models/data/."""
    with open_text(path, "wt") as f:
        for i, line in enumerate(lines):
            f.write(json.dumps({"id": f"m-{i}", "split": "train", "domain": "magpie",
                                "scenario": "magpie.task.0", "tools": [], "messages": [
                                    {"role": "system", "content": "You are a math helper."},
                                    {"role": "user", "content": line}]}) + "\n")


def test_answers_to_conversations_pack_and_rebuild_from_them(tmp_path, smollm2_dir, capsys):
    """`datagen --from-conversations FILE.jsonl.xz` (the real target, a few tokens each), packed,
    rebuilds from the same file and no other: the conversations are named, a changed one is an
    error, a workload pack refuses them."""
    import argparse

    from turnspec.cli import speculator as speculator_cli

    lines = ["what is seven times eight", "how do I add fractions with unlike denominators",
             "is 91 a prime number", "solve 2x + 3 = 11", "what's the area of a circle of radius 2"]
    _conversations(tmp_path / "mg.jsonl.xz", lines)
    parser = argparse.ArgumentParser()
    speculator_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args([
        "speculator", "datagen", "--from-conversations", str(tmp_path / "mg.jsonl.xz"),
        "--conversations-heldout-frac", "0.4", "--out", str(tmp_path / "data"),
        "--model", str(smollm2_dir), "--max-new-tokens", "4", "--speculator", "none",
        "--device", "cpu", "--max-context", "1024", "--kv-memory-gb", "0.25", "--no-progress"])
    assert args.func(args) == 0
    samples = read_samples(tmp_path / "data")
    assert len(samples) == len(lines) and {s.source for s in samples} == {"magpie"}
    packed = pack_responses(tmp_path / "data", tmp_path / "r.jsonl.xz")
    assert packed["samples"] == len(lines)
    with open_text(tmp_path / "r.jsonl.xz") as f:
        assert json.loads(f.readline()) == {"recorded": {"conversations_heldout_frac": 0.4,
                                                         "max_prompt_tokens": 1800}}
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, tmp_path / "again",
                     conversations=tmp_path / "mg.jsonl.xz")
    assert read_samples(tmp_path / "again") == samples
    with pytest.raises(ValueError, match="expected conversations= the folder"):
        unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, tmp_path / "x")
    _conversations(tmp_path / "other.jsonl.xz", [*lines[:-1], "what is the area of a square"])
    with pytest.raises(ValueError, match="does not rebuild"):
        unpack_responses(tmp_path / "r.jsonl.xz", chat.render_many, tmp_path / "x",
                         conversations=tmp_path / "other.jsonl.xz")
    _datagen(tmp_path / "w", chat)
    pack_responses(tmp_path / "w" / "data", tmp_path / "w.jsonl.gz")
    with pytest.raises(ValueError, match="expected no conversations"):
        unpack_responses(tmp_path / "w.jsonl.gz", chat.render_many, tmp_path / "x",
                         conversations=tmp_path / "mg.jsonl.xz")
