"""`turnspec speculator train/eval/export` through argparse, as the console script runs them."""

from __future__ import annotations

import argparse
import importlib.util
import json

import pytest
import torch

from tests.speculator.tiny import TINY_MASK
from turnspec.cli.speculator import register
from turnspec.engine.drafter.folder import read_drafter


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="turnspec")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


def test_train_eval_export(tiny_data, tiny_target_dir, tmp_path, capsys):
    run = tmp_path / "run"
    common = ["--model", str(tiny_target_dir)]
    assert _run("speculator", "train", "--data", str(tiny_data), "--out", str(run), *common,
                "--layers", "1", "--block-size", "4", "--taps", "2",
                "--mask-token-id", str(TINY_MASK), "--batch-size", "8", "--anchors", "8",
                "--max-steps", "6", "--log-every", "3", "--final-eval-samples", "4",
                "--max-len", "64", "--export-dtype", "float32", "--no-progress",
                "--device", "cpu") == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["steps"] == 6 and set(out["tau"]) == {"generic-heldout", "tools-heldout",
                                                    "train-sample"}
    res = tmp_path / "eval.json"
    assert _run("speculator", "eval", "--data", str(tiny_data), *common, "--drafter",
                str(run / "drafter"), "--samples", "4", "--block-size", "3", "--device", "cpu",
                "--json", str(res)) == 0
    ev = json.loads(res.read_text())
    assert ev["block_size"] == 3 and 1.0 <= ev["tau"]["tools-heldout"] <= 3.0
    # several sets in one process (one load of target and drafter), one JSON each, in order
    held = tmp_path / "held.jsonl"
    held.write_text("".join(line for line in (tiny_data / "samples.jsonl").open()
                            if json.loads(line)["split"] == "heldout"))
    two = [tmp_path / "a.json", tmp_path / "b.json"]
    assert _run("speculator", "eval", "--data", str(tiny_data), "--data", str(held), *common,
                "--drafter", str(run / "drafter"), "--samples", "4", "--block-size", "3",
                "--device", "cpu", "--json", str(two[0]), "--json", str(two[1])) == 0
    a, b = (json.loads(p.read_text()) for p in two)
    assert a["tau"] == ev["tau"] and a["data"] == str(tiny_data) and b["data"] == str(held)
    assert set(b["tau"]) == {"generic-heldout", "tools-heldout"}
    with pytest.raises(SystemExit, match="1 --json for 2 --data"):
        _run("speculator", "eval", "--data", str(tiny_data), "--data", str(held), *common,
             "--drafter", str(run / "drafter"), "--device", "cpu", "--json", str(two[0]))
    with pytest.raises(ValueError, match="hold no train split"):
        _run("speculator", "eval", "--data", str(held), *common, "--drafter",
             str(run / "drafter"), "--device", "cpu", "--with-train")
    # several block sizes in one pass: one JSON per set with each block's results, the
    # same as scoring each alone; a table with intervals on stderr
    capsys.readouterr()
    multi = tmp_path / "multi.json"
    assert _run("speculator", "eval", "--data", str(held), *common, "--drafter",
                str(run / "drafter"), "--samples", "4", "--block-size", "3,2", "--device", "cpu",
                "--json", str(multi)) == 0
    m = json.loads(multi.read_text())
    assert m["block_sizes"] == [3, 2] and m["by_block"]["3"]["tau"] == b["tau"]
    assert m["by_block"]["2"]["block_size"] == 2
    assert all(1.0 <= t <= 2.0 for t in m["by_block"]["2"]["tau"].values())
    err = capsys.readouterr().err
    assert "B=3" in err and "B=2" in err and "tools-heldout" in err
    with pytest.raises(SystemExit):
        _run("speculator", "eval", "--data", str(held), "--block-size", "8,x")
    # with lookup and three verify branches a step, their first drafts swapped
    assert _run("speculator", "eval", "--data", str(held), *common, "--drafter",
                str(run / "drafter"), "--samples", "4", "--block-size", "3", "--device", "cpu",
                "--lookup", "--branches", "3", "--branch-plan", "first", "--json", str(multi)) == 0
    br = json.loads(multi.read_text())["tau"]
    assert set(br) == {"generic-heldout", "tools-heldout", "generic-heldout+lookup+3br",
                       "tools-heldout+lookup+3br"}
    assert all(1.0 <= t <= 3.0 for t in br.values())
    # the same with the planned swaps (the default, as `serve --spec-branch-plan`): its own
    # split names
    assert _run("speculator", "eval", "--data", str(held), *common, "--drafter",
                str(run / "drafter"), "--samples", "4", "--block-size", "3", "--device", "cpu",
                "--lookup", "--branches", "3", "--json", str(multi)) == 0
    planned = json.loads(multi.read_text())["tau"]
    assert set(planned) == {"generic-heldout", "tools-heldout",
                            "generic-heldout+lookup+3br+planned", "tools-heldout+lookup+3br+planned"}
    assert all(1.0 <= t <= 3.0 for t in planned.values())
    with pytest.raises(ValueError, match="branches=17: expected 1..16"):
        _run("speculator", "eval", "--data", str(held), *common, "--drafter",
             str(run / "drafter"), "--device", "cpu", "--lookup", "--branches", "17")
    with pytest.raises(ValueError, match="datastore: its block rides as a verify branch"):
        _run("speculator", "eval", "--data", str(held), *common, "--drafter",
             str(run / "drafter"), "--device", "cpu", "--lookup", "--datastore", str(held))
    with pytest.raises(ValueError, match="branches=3: expected lookup too"):
        _run("speculator", "eval", "--data", str(held), *common, "--drafter",
             str(run / "drafter"), "--device", "cpu", "--branches", "3")
    # export from the run folder (its checkpoint.pt) == the drafter train exported
    assert _run("speculator", "export", "--out", str(tmp_path / "x"), "--checkpoint", str(run),
                "--dtype", "float32", "--reproduce", "turnspec speculator train ...") == 0
    card = (tmp_path / "x" / "README.md").read_text()
    assert "| tools-heldout |" in card and "turnspec speculator train ..." in card
    assert "| tools-train |" in card and "6 steps" in card
    a, b = read_drafter(run / "drafter"), read_drafter(tmp_path / "x")
    assert a.config == b.config
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values(), strict=True))
    assert _run("speculator", "export", "--out", str(tmp_path / "y"), "--checkpoint",
                str(tmp_path / "x")) == 0                                # re-export to bf16
    assert read_drafter(tmp_path / "y").fc.weight.dtype == torch.bfloat16


def test_datagen_through_the_drafter_writes_the_plain_answers(smollm2_dir, tmp_path, capsys):
    """Greedy speculative datagen (pipeline DATAGEN_SPECS) is lossless: the same samples as
    plain decoding with the real target and the committed drafter (fp32 on the CPU)."""
    common = ["--model", str(smollm2_dir), "--tool-conversations", "1",
              "--heldout-conversations", "0", "--generic", "0", "--max-new-tokens", "24",
              "--no-progress", "--device", "cpu", "--kv-memory-gb", "1"]
    rows = {}
    for spec in ("none", "default"):
        out = tmp_path / spec
        assert _run("speculator", "datagen", "--out", str(out), *common, "--speculator",
                    spec) == 0
        capsys.readouterr()
        assert json.loads((out / "meta.json").read_text())["speculator"] == spec
        rows[spec] = {r["id"]: r for r in map(json.loads, (out / "samples.jsonl").open())}
    assert len(rows["none"]) >= 3 and rows["default"] == rows["none"]   # finishing order differs


def test_datagen_shard(smollm2_dir, tmp_path, capsys):
    """Two shards of one datagen answer disjoint halves of its prompts with the real target."""
    common = ["--model", str(smollm2_dir), "--tool-conversations", "0",
              "--heldout-conversations", "0", "--generic", "4", "--max-new-tokens", "3",
              "--no-progress", "--device", "cpu", "--speculator", "none"]
    ids = []
    for i in range(2):
        out = tmp_path / f"s{i}"
        # shard 1: one prompt per prefill step, on one torch thread (pipeline DATAGEN_THREADS)
        knobs = ["--max-prefill-tokens", "64", "--threads", "1"] if i else []
        threads = torch.get_num_threads()
        try:
            assert _run("speculator", "datagen", "--out", str(out), "--shard", f"{i}/2", *common,
                        *knobs) == 0
            used = torch.get_num_threads()
        finally:
            torch.set_num_threads(threads)   # the CLI ran in this process
        assert used == (1 if i else threads)
        stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert stats["written"] == stats["prompts"] > 0
        assert stats["engine_load_s"] > 0 and stats["prompts_build_s"] >= 0
        # the prompts render in a child while the engine loads, in parts: the first prompt
        # waits for the load and part 0 only
        assert stats["prompt_parts"] == stats["prompt_parts_used"] == 4
        assert stats["setup_s"] >= max(stats["engine_load_s"], stats["prompts_first_part_s"])
        assert stats["prompts_first_part_s"] <= stats["prompts_build_s"]
        # where the answering part's CPU went: the main thread steps the engine
        assert 0 < stats["main_thread_cpu_s"] <= stats["process_cpu_s"] + 0.1
        # (per-thread figures are /proc's 10 ms ticks, the process's an exact clock)
        assert stats["main_thread_cpu_s"] + stats["other_threads_cpu_s"] \
            <= 1.1 * stats["process_cpu_s"] + 0.3
        assert 0 <= stats["prompts_build_cpu_s"] <= stats["prompts_build_s"] + 0.1
        meta = json.loads((out / "meta.json").read_text())
        assert meta["shard"] == f"{i}/2" and meta["max_prefill_tokens"] == (64 if i else 4096)
        assert meta["speculator"] == "none" and meta["threads"] == used
        ids.append({json.loads(line)["id"] for line in (out / "samples.jsonl").open()})
    assert ids[0] and ids[1] and not ids[0] & ids[1]
    for bad in ("2/2", "x", "1/0"):
        with pytest.raises(SystemExit):
            _run("speculator", "datagen", "--out", str(tmp_path / "bad"), "--shard", bad, *common)
    assert "--shard" in capsys.readouterr().err
    with pytest.raises(ValueError, match="max_prefill_tokens: expected a positive integer"):
        _run("speculator", "datagen", "--out", str(tmp_path / "bad"), *common,
             "--max-prefill-tokens", "0")


def test_datagen_admit_min_free_is_checked(smollm2_dir, tmp_path):
    """--admit-min-free 0 is an error, not the default; it is for the stream feed only."""
    common = ["speculator", "datagen", "--out", str(tmp_path / "d"), "--model", str(smollm2_dir),
              "--device", "cpu", "--no-progress"]
    with pytest.raises(ValueError, match="admit_min_free"):
        _run(*common, "--admit-min-free", "0")
    with pytest.raises(SystemExit, match="stream only"):
        _run(*common, "--feed", "batches", "--admit-min-free", "4")


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang installed")
def test_datagen_engine_sglang_without_sglang_fails_fast_with_a_hint(tmp_path):
    """Through the console script's main(): the install hint serve gives, a non-zero exit,
    before a prompt renders or a model converts (no --out folder, no --model needed)."""
    from turnspec.cli.main import main
    from turnspec.engine.sglang import INSTALL_HINT

    out = tmp_path / "d"
    with pytest.raises(SystemExit) as e:
        main(["speculator", "datagen", "--engine", "sglang", "--out", str(out), "--shard", "0/6"])
    assert e.value.code == f"datagen: {INSTALL_HINT}"    # printed to stderr, exit status 1
    assert "needs the sglang package" in INSTALL_HINT and "scripts/gpu/README.md" in INSTALL_HINT
    assert not out.exists()
