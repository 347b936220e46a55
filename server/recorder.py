"""Opt-in recording of finished turns for drafter fine-tuning (`turnspec serve
--record-conversations DIR`; read back by `turnspec speculator datagen --from-conversations`).

Each turn that finishes (stop, length or tool calls; never a cancelled or failed one) becomes one
JSON line in the workload record schema (workloads/README.md): `messages` is what the target was
prompted with (the instructions as the system message, then the history) plus its reply, `tools`
the tools offered in Chat Completions form. A conversation of N turns is N records, each
extending the one before; datagen keeps each prompt once. A client that sends no system message
gets the chat template's default, and its records then start with the user message.

The event loop never waits on disk: `record()` only puts the turn on a bounded queue, and drops
it with a warning when the queue is full. A background thread redacts, serializes and appends,
rotating to a new `conversations-<n>.jsonl` past `max_file_bytes` and deleting the oldest files
past `max_files`. Files are created readable by the server's user only (0600; a folder it
creates, 0700). Redaction replaces every match of the configured regexes in each message's
content and in every string (and number) of a tool call's arguments; the server's API key is
always redacted, wherever it appears in a record.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("turnspec.server")

REDACTED = "[redacted]"
FILE_PREFIX = "conversations-"  # speculator/recorded.py reads conversations-*.jsonl


@dataclass(slots=True, frozen=True)
class RecorderConfig:
    """Where and how finished turns are recorded; `redact` holds regexes (Python syntax)."""

    folder: Path
    redact: tuple[str, ...] = ()
    max_file_bytes: int = 64 << 20
    max_files: int = 50
    queue_size: int = 1024
    domain: str = "recorded"

    def __post_init__(self) -> None:
        for i, pattern in enumerate(self.redact):
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"redact[{i}] {pattern!r}: not a valid regular expression "
                                 f"({e})") from None
        if self.max_file_bytes < 1024:
            raise ValueError(f"max_file_bytes: expected >= 1024, got {self.max_file_bytes}")
        if self.max_files < 1:
            raise ValueError(f"max_files: expected >= 1, got {self.max_files}")
        if self.queue_size < 1:
            raise ValueError(f"queue_size: expected >= 1, got {self.queue_size}")
        if not re.fullmatch(r"[a-z0-9_]+", self.domain):
            raise ValueError(f"domain: expected lowercase letters, digits and '_', got "
                             f"{self.domain!r}")


def read_redact_file(path: str | Path) -> tuple[str, ...]:
    """One regex per line; blank lines and lines starting with '#' are skipped."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


class ConversationRecorder:
    """A bounded, non-blocking JSONL writer of finished turns (see the module docstring)."""

    def __init__(self, config: RecorderConfig, secrets: tuple[str | None, ...] = ()) -> None:
        self.config = config
        self._patterns = [re.compile(p) for p in config.redact]
        # the secret as sent and as JSON escapes it (a quote or backslash in a key)
        forms = ({s, json.dumps(s)[1:-1]} for s in secrets if s)
        self._secrets = [re.compile("|".join(map(re.escape, sorted(f, key=len, reverse=True))))
                         for f in forms]
        self._queue: queue.Queue[tuple[list[dict], list[dict], dict] | None] = queue.Queue(
            config.queue_size)
        self.written = self.dropped = self.failed = 0
        config.folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # callers' words: owner only
        self._seq = max((_seq_of(p) for p in self._files()), default=0)
        self._file: IO[bytes] | None = None
        self._size = 0  # bytes in the current file
        self._thread = threading.Thread(target=self._run, name="turnspec-recorder", daemon=True)
        self._thread.start()

    def record(self, messages: list[dict], tools: list[dict], meta: dict[str, Any]) -> bool:
        """Queue one finished turn; never blocks. False when the queue is full (dropped)."""
        try:
            self._queue.put_nowait((messages, tools, meta))
            return True
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 100 == 0:
                log.warning("conversation recorder: queue full (%d turns waiting for the disk); "
                            "dropped %d turn(s) so far", self.config.queue_size, self.dropped)
            return False

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop (blocks: call it off the event loop)."""
        if self._thread.is_alive():
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                log.warning("conversation recorder: still %d turn(s) queued after %.0f s; "
                            "stopping without them", self._queue.qsize(), timeout)
            self._thread.join(timeout)
        log.info("conversation recorder: %d turn(s) written, %d dropped, %d failed",
                 self.written, self.dropped, self.failed)

    # -- the writer thread -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                try:
                    self._write(self.line(*item))
                    self.written += 1
                except Exception:  # a disk error must not kill the thread for good
                    self.failed += 1
                    log.exception("conversation recorder: could not write a turn")
        finally:
            if self._file is not None:
                self._file.close()

    def line(self, messages: list[dict], tools: list[dict], meta: dict[str, Any]) -> str:
        """One record, redacted, as a JSON line."""
        record = {"id": f"rec-{uuid.uuid4().hex[:20]}", "split": "train",
                  "domain": self.config.domain,
                  "scenario": f"{self.config.domain}.{meta.get('transport', 'unknown')}",
                  "tools": tools, "messages": [self._message(m) for m in messages],
                  "turnspec": {**meta, "recorded_unix_ms": round(time.time() * 1000)}}
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        for secret in self._secrets:  # wherever it hides (a tool description, an id, ...)
            text = secret.sub(REDACTED, text)
        return text + "\n"

    def _redact(self, text: str) -> str:
        for p in itertools.chain(self._patterns, self._secrets):
            text = p.sub(REDACTED, text)
        return text

    def _message(self, m: dict) -> dict:
        out = dict(m)
        if isinstance(out.get("content"), str):
            out["content"] = self._redact(out["content"])
        if out.get("tool_calls"):
            out["tool_calls"] = [{**c, "function": {**c["function"], "arguments":
                                                    self._arguments(c["function"]["arguments"])}}
                                 for c in out["tool_calls"]]
        return out

    def _arguments(self, raw: str) -> str:
        """Redact the strings and numbers of a call's JSON arguments, keeping it valid JSON."""
        try:
            value = json.loads(raw)
        except ValueError:
            return self._redact(raw)
        return json.dumps(self._leaves(value), ensure_ascii=False, separators=(",", ":"))

    def _leaves(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._leaves(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._leaves(v) for v in value]
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = json.dumps(value)
            redacted = self._redact(text)
            return value if redacted == text else redacted
        return value

    def _files(self) -> list[Path]:
        return sorted(self.config.folder.glob(f"{FILE_PREFIX}*.jsonl"), key=_seq_of)

    def _write(self, line: str) -> None:
        data = line.encode()
        if self._file is None or (self._size and self._size + len(data) > self.config.max_file_bytes):
            self._rotate()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()  # whole lines for a reader; a crash loses what the OS had not written
        self._size += len(data)

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
        self._seq += 1
        path = self.config.folder / f"{FILE_PREFIX}{self._seq:06d}.jsonl"
        self._file = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
        self._size = 0
        for old in self._files()[: -self.config.max_files]:
            old.unlink(missing_ok=True)


def _seq_of(path: Path) -> int:
    digits = path.stem.removeprefix(FILE_PREFIX)
    return int(digits) if digits.isdigit() else 0
