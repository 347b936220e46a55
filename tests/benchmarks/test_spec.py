"""`turnspec bench spec` end to end on the real model and the committed drafter (tiny budget):
every policy x block row is there, outputs are identical to plain greedy, the JSON is written."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from turnspec.benchmarks.spec import DEFAULT_DATA, spread
from turnspec.cli.main import main
from turnspec.engine.spec.proposers.datastore import read_answers


def test_bench_spec_rows_per_policy_and_block(smollm2_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "spec.json"
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--n", "1", "--max-new-tokens", "12",
               "--blocks", "4,8", "--policies", "adaptive,always", "--no-transformers",
               "--json", str(out)])
    assert rc == 0
    record = json.loads(out.read_text())
    assert {r["source"] for r in record["rows"]} == {"tools", "generic"}
    for row in record["rows"]:
        assert [(x["policy"], x["block"]) for x in row["spec"]] == \
            [("adaptive", 4), ("adaptive", 8), ("always", 4), ("always", 8)]
        assert all(x["identical"] for x in row["spec"]), row
        always = [x for x in row["spec"] if x["policy"] == "always"]
        # always: every decode token came from a verify step, none counted past max_tokens/EOS
        assert all(x["tau"] >= 1.0 and x["spec_share"] == pytest.approx(1.0) for x in always), always
        assert all(x["tau_ci90"][0] <= x["tau"] <= x["tau_ci90"][1] for x in row["spec"]), row
        assert row["best"]["block"] in (4, 8)
    assert "DFlash adaptive B=4" in capsys.readouterr().out


def test_bench_spec_times_branch_counts(smollm2_dir: Path, tmp_path: Path, capsys) -> None:
    """--branches 1,3 --branch-plans first,planned --datastores off,on: each configuration with
    one verify branch and with three under each plan, without and with the datastore branch
    (an earlier run's held-out answers as its store, less those of the prompts timed here),
    side by side; all stay identical to plain greedy. A store holding a timed prompt's answer is
    refused."""
    out = tmp_path / "spec.json"
    timed = {tuple(a) for a in read_answers(DEFAULT_DATA)}
    store = tmp_path / "store.jsonl"
    store.write_text("".join(json.dumps({"completion": a}) + "\n"
                             for a in read_answers(DEFAULT_DATA.parent / "heldout-run7.jsonl")
                             if tuple(a) not in timed))
    args = ["bench", "spec", "--model", str(smollm2_dir), "--n", "1", "--max-new-tokens", "12",
            "--blocks", "8", "--policies", "always", "--lookups", "on", "--branches",
            "1,3", "--branch-plans", "first,planned", "--datastores", "off,on",
            "--no-transformers", "--json", str(out)]
    assert main([*args, "--spec-datastore", str(DEFAULT_DATA)]) == 2
    assert "holds the answers of 64 of the 64 held-out turns" in capsys.readouterr().err
    rc = main([*args, "--spec-datastore", str(store)])
    assert rc == 0
    for row in json.loads(out.read_text())["rows"]:
        assert [(x["branches"], x["plan"], x["datastore"]) for x in row["spec"]] == [
            (1, "first", False), (3, "first", False), (3, "first", True), (3, "planned", False),
            (3, "planned", True)]
        assert all(x["identical"] and x["tau"] >= 1.0 for x in row["spec"]), row
        assert "branches" in row["best"] and "plan" in row["best"] and "datastore" in row["best"]
    printed = capsys.readouterr().out
    assert "+lookup +3br planned +ds" in printed
    assert "+lookup +3br " in printed and "+lookup +3br planned" in printed
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--branch-plans", "tree",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--branch-plans 'tree': expected plans of ('first', 'planned')" in capsys.readouterr().err
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--datastores", "on",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--datastores on: expected --spec-datastore PATH" in capsys.readouterr().err
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--spec-datastore-learn",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--spec-datastore-learn: bench spec times the same prompts" in capsys.readouterr().err
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--branches", "1,two",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--branches '1,two': expected integers 1..16" in capsys.readouterr().err


def test_bench_spec_times_a_peer_drafter_beside_the_main_one(smollm2_dir: Path, tmp_path: Path,
                                                              capsys) -> None:
    """--peer-speculator: every configuration runs with both drafters, interleaved; a peer with
    its weights zeroed guesses nothing, so it reads a lower tau than the default drafter on the
    same prompts while both stay identical to plain greedy (its rows really use its weights)."""
    from safetensors.torch import load_file, save_file

    from turnspec.engine.drafter.folder import DEFAULT_DRAFTER_DIR

    peer = tmp_path / "zeroed"
    peer.mkdir()
    shutil.copy(DEFAULT_DRAFTER_DIR / "config.json", peer / "config.json")
    weights = load_file(DEFAULT_DRAFTER_DIR / "model.safetensors")
    save_file({k: v * 0 for k, v in weights.items()}, peer / "model.safetensors")
    out = tmp_path / "spec.json"
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--n", "1", "--max-new-tokens", "12",
               "--blocks", "8", "--policies", "always", "--lookups", "off",
               "--peer-speculator", str(peer), "--no-transformers", "--json", str(out)])
    assert rc == 0
    record = json.loads(out.read_text())
    assert record["peer_speculator"] == str(peer)
    tools = next(r for r in record["rows"] if r["source"] == "tools")
    main_row, peer_row = tools["spec"]
    assert (main_row["drafter"], peer_row["drafter"]) == ("main", "peer")
    assert main_row["identical"] and peer_row["identical"]
    assert peer_row["tau"] < main_row["tau"], tools
    assert re.search(r"DFlash always B=8 p[\d.]+ peer ", capsys.readouterr().out)
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--peer-speculator", "none",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--peer-speculator none: expected a second drafter" in capsys.readouterr().err


def test_bench_spec_rejects_an_unknown_policy(smollm2_dir: Path, tmp_path: Path, capsys) -> None:
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--policies", "sometimes",
               "--no-transformers", "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "expected one of" in capsys.readouterr().err


def test_bench_spec_repeat_reports_each_pass_and_the_median(smollm2_dir: Path, tmp_path: Path,
                                                            capsys) -> None:
    out = tmp_path / "spec.json"
    # one short generic prompt: the passes are what is checked, not the 1,000-token tool prompts
    rows = [json.loads(line) for line in DEFAULT_DATA.open()]
    short = min((r for r in rows if r["source"] == "generic"), key=lambda r: len(r["input_ids"]))
    data = tmp_path / "generic.jsonl"
    data.write_text(json.dumps(short) + "\n")
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--data", str(data), "--n", "1",
               "--max-new-tokens", "8", "--blocks", "4", "--policies", "always",
               "--no-transformers", "--repeat", "3", "--json", str(out)])
    assert rc == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["source"] == "generic"
    assert row["passes"] == 3 and len(row["plain_tok_s_per_pass"]) == 3
    (x,) = row["spec"]
    assert len(x["speedup_per_pass"]) == 3 and x["identical"]
    assert sorted(x["speedup_per_pass"])[1] == x["speedup_median"]
    assert "3 passes: no spec tok/s" in capsys.readouterr().out
    rc = main(["bench", "spec", "--model", str(smollm2_dir), "--repeat", "0", "--no-transformers",
               "--json", str(tmp_path / "x.json")])
    assert rc == 2
    assert "--repeat 0: expected at least 1" in capsys.readouterr().err


def test_prompts_are_spread_over_a_source_not_its_first_n() -> None:
    ordered = list(range(100))                      # datagen order: shortest answer first
    assert spread(ordered, 4) == [0, 25, 50, 75]
    assert spread(ordered[:3], 8) == [0, 1, 2]      # fewer than asked: all of them
    with pytest.raises(ValueError, match="at least one prompt"):
        spread(ordered, 0)
