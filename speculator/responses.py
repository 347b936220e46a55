"""Carry datagen across sessions as completions only, rebuilt into samples from the workload.

A datagen folder is mostly prompt tokens (a ~1,000-token system prompt with tools, then the
call so far, for ~75 response tokens), and prompts are deterministic: the workload generator
and the chat template give them back from the datagen arguments. So `pack` keeps just the
target's completions plus a hash of each prompt (one GPU session's 3.6M response tokens: a
few MB gzipped, small enough for the GPU machine's transfers), and `unpack` rebuilds the full
samples elsewhere without running the target again. Data then adds up across GPU sessions.
The prompt hash makes a workload or chat-template change an error, never silent mismatch.

Data answered from conversations (`datagen --from-conversations`: recorded traffic, the Magpie
lines) packs the same way; its prompts come back from those conversations instead of the
workload generator, so `unpack` is given them (the folder or the .jsonl.xz they were kept in).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from turnspec.speculator.data import (
    SAMPLES_FILE,
    Sample,
    join_ints,
    open_text,
    read_samples,
    samples_path,
)
from turnspec.speculator.prompts import RenderFn, build_prompt_items
from turnspec.speculator.recorded import recorded_prompt_items
from turnspec.workloads import stable_unit

# datagen arguments that determine the prompts (meta.json keys -> build_prompt_items kwargs)
BUILD_KEYS = ("tool_conversations", "heldout_conversations", "generic", "generic_heldout_frac",
              "max_prompt_tokens", "seed", "readback_frac", "dictation_frac",
              "synthetic_conversations", "synthetic_heldout", "workload")
# keys added later, with the value that rebuilds packs written before them
BUILD_DEFAULTS = {"dictation_frac": 0.0, "synthetic_conversations": 0, "synthetic_heldout": 0,
                  "workload": 1}
# what rebuilds data answered from conversations (meta.json's prompt_source "recorded")
RECORDED_KEYS = ("conversations_heldout_frac", "max_prompt_tokens")


def prompt_hash(ids: tuple[int, ...]) -> str:
    # the bytes of json.dumps(list(ids)), which the committed packs were hashed with, built
    # ~3x faster (a rebuild hashes ~100k prompts of ~1,000 ids)
    return hashlib.sha256(("[" + join_ints(", ", ids) + "]").encode()).hexdigest()[:16]


def pack_responses(data: str | Path, out_file: str | Path) -> dict:
    """data: a datagen folder (samples.jsonl + meta.json) -> JSONL of completions, gzipped or
    xz-compressed by the name of out_file (.gz / .xz)."""
    meta_path = samples_path(data).parent / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    recorded = meta.get("prompt_source") == "recorded"
    keys, meta = (RECORDED_KEYS, meta) if recorded else (BUILD_KEYS, {**BUILD_DEFAULTS, **meta})
    missing = [k for k in keys if k not in meta]
    if missing:
        raise ValueError(f"{meta_path}: missing datagen arguments {missing}; only data written by "
                         "`turnspec speculator datagen` with them recorded can be packed")
    samples = read_samples(data)
    tokens = 0
    with open_text(out_file, "wt") as f:
        head = {"recorded" if recorded else "build": {k: meta[k] for k in keys}}
        f.write(json.dumps(head) + "\n")
        for s in samples:
            p = s.prompt_len
            tokens += len(s.input_ids) - p
            f.write(json.dumps({"id": s.id, "split": s.split, "source": s.source,
                                "prompt": prompt_hash(s.input_ids[:p]),
                                "completion": list(s.input_ids[p:])}, separators=(",", ":")) + "\n")
    return {"samples": len(samples), "response_tokens": tokens, "out": str(out_file),
            "bytes": Path(out_file).stat().st_size}


def unpack_responses(responses: str | Path, render: RenderFn, out_dir: str | Path,
                     train_fraction: float = 1.0, subset_seed: int = 0,
                     conversations: str | Path | None = None) -> dict:
    """Rebuild out_dir/samples.jsonl (+ meta.json) from a packed file and the workload, or, for
    a pack of data answered from conversations, from `conversations` (the folder or file the
    datagen read; any superset of it rebuilds too, since prompts are found by id).

    train_fraction < 1 keeps that stable share of the train samples (chosen by subset_seed and
    the sample id; held-out ones are all kept) and renders only their prompts. A session trains
    on ~0.4-0.6 epochs of everything carried, so a different half each session costs it little,
    and the rebuild's CPU time, which competes with datagen on the GPU host, halves."""
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction: expected (0, 1], got {train_fraction}")
    with open_text(responses) as f:
        head = json.loads(f.readline())
        records = [json.loads(line) for line in f]
    if train_fraction < 1.0:
        records = [r for r in records if r["split"] != "train"
                   or stable_unit(f"subset:{subset_seed}:{r['id']}") < train_fraction]
    wanted = {r["id"] for r in records}
    if "recorded" in head:
        if conversations is None:
            raise ValueError(f"{responses}: answered from recorded conversations; expected "
                             "conversations= the folder or .jsonl(.xz) file they came from")
        build = {**head["recorded"], "prompt_source": "recorded",
                 "from_conversations": str(conversations)}
        items, _ = recorded_prompt_items(render, conversations,
                                         head["recorded"]["conversations_heldout_frac"],
                                         head["recorded"]["max_prompt_tokens"],
                                         keep=wanted.__contains__)
    else:
        if conversations is not None:
            raise ValueError(f"{responses}: answered from the workload generator; its prompts "
                             "rebuild from the pack alone, expected no conversations")
        # a pack written before a build key existed was built with that key's old value
        build = {**BUILD_DEFAULTS, **head["build"]}
        items, _ = build_prompt_items(render, **build, keep=wanted.__contains__)
    prompts = {it.id: it for it in items}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with (out / SAMPLES_FILE).open("w") as f:
        for r in records:
            it = prompts.get(r["id"])
            if it is None or prompt_hash(it.prompt_ids) != r["prompt"]:
                raise ValueError(f"{responses}: prompt {r['id']!r} does not rebuild to the prompt it "
                                 "was answered for (the workload generator, the generic prompts, "
                                 "the conversations or the chat template changed since); "
                                 "regenerate instead")
            comp = tuple(r["completion"])
            f.write(Sample(r["id"], r["split"], r["source"], it.prompt_ids + comp,
                           (0,) * len(it.prompt_ids) + (1,) * len(comp)).to_json() + "\n")
    (out / "meta.json").write_text(json.dumps({**build, "unpacked_from": str(responses),
                                               "train_fraction": train_fraction,
                                               "subset_seed": subset_seed,
                                               "written": len(records)}, indent=2))
    return {"samples": len(records), "out": str(out)}
