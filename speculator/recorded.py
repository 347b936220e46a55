"""Conversations a deployment recorded (`turnspec serve --record-conversations DIR`) as datagen
prompts: `turnspec speculator datagen --from-conversations DIR`.

The server writes one record per finished turn, in the workload record schema (id, split,
domain, scenario, tools, messages; server/recorder.py), into `DIR/conversations-*.jsonl`. A
conversation of N turns therefore comes as N records, each the one before plus a turn; the
prompts here are every assistant message's history, once each (the same history in several
records is one prompt), and a record that ends with a user message is a prompt as a whole (the
conversations `turnspec speculator magpie` writes). A record's `domain` names its samples'
source ("recorded" for the server's, "magpie", ...). The target answers them again greedily, as for workload prompts, so the
drafter learns what the target says, whatever the deployment sampled.

Held out by call, not by turn: a record's call is its tools plus its messages up to the first
user message (what every later turn of that call starts with), and a stable hash of it puts
the call's prompts all in train or all in held-out (`heldout_frac`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from turnspec.speculator.data import open_text
from turnspec.speculator.datagen import PromptItem
from turnspec.speculator.prompts import Candidate, RenderFn, render_items
from turnspec.workloads import stable_unit

SOURCE = "recorded"
PATTERN = "conversations-*.jsonl"  # server/recorder.py's file names (rotated files included)


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False)
                          .encode()).hexdigest()[:16]


def read_recorded(folder: str | Path) -> Iterator[dict]:
    """The records of every recorded file in `folder`, oldest file first, or of one file (.jsonl,
    or .jsonl.xz / .gz as the Magpie conversations are kept under models/data/); a torn last line
    (the server killed mid-write) is skipped."""
    path = Path(folder)
    files = [path] if path.is_file() else sorted(path.glob(PATTERN))
    if not files:
        raise FileNotFoundError(f"{folder}: no {PATTERN} files; expected the folder given to "
                                "`turnspec serve --record-conversations` or one such file")
    for path in files:
        with open_text(path) as f:
            for n, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    raise ValueError(f"{path}:{n}: expected one JSON record a line ({e})") from None
                if not isinstance(rec.get("messages"), list) or not isinstance(rec.get("tools"), list):
                    raise ValueError(f"{path}:{n}: expected a workload record with 'messages' and "
                                     "'tools' lists")
                yield rec


def _candidates(folder: str | Path, heldout_frac: float) -> Iterator[Candidate]:
    seen: set[str] = set()
    for rec in read_recorded(folder):
        messages, tools = rec["messages"], rec["tools"]
        source = str(rec.get("domain") or SOURCE)
        first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"),
                          len(messages))
        call = _digest([tools, messages[: first_user + 1]])
        split = "heldout" if stable_unit(f"{SOURCE}:{call}") < heldout_frac else "train"
        ends_open = bool(messages) and messages[-1].get("role") == "user"
        for i, m in enumerate([*messages, {"role": "assistant"}] if ends_open else messages):
            if m.get("role") != "assistant" or i == 0:
                continue
            prompt = _digest([tools, messages[:i]])
            if prompt in seen:
                continue
            seen.add(prompt)
            yield f"rec-{call}:{prompt}", split, source, messages[:i], tools


def recorded_prompt_items(render: RenderFn, folder: str | Path, heldout_frac: float = 0.1,
                          max_prompt_tokens: int = 2048,
                          keep: Callable[[str], bool] | None = None,
                          ) -> tuple[list[PromptItem], int]:
    """Prompt items (source: the records' domain, ids "rec-<call>:<prompt>") from a folder or
    file, and the number skipped for exceeding max_prompt_tokens. keep: render only the prompts
    whose id it accepts (rebuilding packed responses)."""
    if not 0.0 <= heldout_frac < 1.0:
        raise ValueError(f"heldout_frac: expected [0, 1), got {heldout_frac}")
    candidates = _candidates(folder, heldout_frac)
    if keep is not None:
        candidates = (c for c in candidates if keep(c[0]))
    return render_items(render, candidates, max_prompt_tokens)
