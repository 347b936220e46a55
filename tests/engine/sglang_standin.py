"""A stand-in for `sglang.Engine` in CPU tests (SGLang runs on CUDA machines only), over the
fake SGLang scheduler process (fake_sglang_scheduler.py).

It has the surface SGLangEngine uses, with SGLang 0.5.17's shapes: `async_generate(stream=True)`
(an async generator of incremental chunks), `tokenizer_manager.auto_create_handle_loop`,
`.abort_request`, `.get_loads` (objects with `to_dict()`), `get_all_child_pids`, `shutdown`.
And SGLang's behaviour where it matters here: the chunks come from the other process, and
when that process dies, a request waiting on it waits forever (SGLang's ZMQ says nothing
either): only turnspec's watch can end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

SCHEDULER = Path(__file__).with_name("fake_sglang_scheduler.py")


class _Snapshot:
    """What `get_loads()` returns per rank: SGLang's LoadSnapshot offers `to_dict()`."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def to_dict(self) -> dict[str, Any]:
        return dict(self._fields)


class StandInTokenizerManager:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._states: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._load: dict[str, Any] | None = None
        self._reader: asyncio.Task[None] | None = None

    def auto_create_handle_loop(self) -> None:
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._handle_loop())

    async def _handle_loop(self) -> None:
        reader = asyncio.StreamReader(limit=1 << 20)
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._proc.stdout)
        while line := await reader.readline():
            msg = json.loads(line)
            if "load" in msg:
                self._load = msg["load"]
            elif (q := self._states.get(msg["rid"])) is not None:
                q.put_nowait(msg)
        # end of the pipe: the scheduler is gone, and (like SGLang) nobody tells the requests

    def send(self, msg: dict[str, Any]) -> None:
        try:
            self._proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # a dead scheduler: SGLang's ZMQ send does not fail either

    def abort_request(self, rid: str) -> None:
        self.send({"op": "abort", "rid": rid})

    async def get_loads(self) -> list[_Snapshot]:
        return [] if self._load is None else [_Snapshot(self._load)]

    async def generate_request(self, rid: str, prompt_tokens: int,
                               max_new_tokens: int) -> AsyncIterator[dict[str, Any]]:
        q = self._states[rid] = asyncio.Queue()
        self.send({"op": "generate", "rid": rid, "prompt_tokens": prompt_tokens,
                   "max_new_tokens": max_new_tokens})
        try:
            while True:
                chunk = await q.get()
                yield chunk
                if chunk["meta_info"]["finish_reason"] is not None:
                    return
        finally:
            self._states.pop(rid, None)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None


def _wait_started(pid: int, timeout_s: float = 10.0) -> None:
    """Return once the child's command line is its own, as sglang.Engine returns only once its
    schedulers are up: right after Popen, /proc/PID/cmdline is at times still empty (8 of 300
    tries here), and the watch would name the process `pid N`."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    deadline = time.monotonic() + timeout_s
    while cmdline.exists() and SCHEDULER.name.encode() not in cmdline.read_bytes():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the fake scheduler (pid {pid}) did not start in {timeout_s} s")
        time.sleep(0.005)


class StandInSGLang:
    """Built like `sglang.Engine(**engine_kwargs)`; starts the fake scheduler (a token every
    `step_s` seconds for each running request)."""

    def __init__(self, step_s: float = 0.02, **engine_kwargs: Any) -> None:
        self.engine_kwargs = engine_kwargs
        self.scheduler = subprocess.Popen([sys.executable, str(SCHEDULER), str(step_s)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        _wait_started(self.scheduler.pid)
        self.tokenizer_manager = StandInTokenizerManager(self.scheduler)
        self.shut_down = False

    async def async_generate(self, *, input_ids: list[int], sampling_params: dict[str, Any],
                             stream: bool, rid: str,
                             external_trace_header: dict[str, str] | None = None
                             ) -> AsyncIterator[dict[str, Any]]:
        assert stream, "SGLangEngine streams"
        return self.tokenizer_manager.generate_request(rid, len(input_ids),
                                                       sampling_params["max_new_tokens"])

    def get_all_child_pids(self) -> list[int]:
        return [self.scheduler.pid]

    def shutdown(self) -> None:
        self.shut_down = True
        self.reap()

    def reap(self) -> int:
        """Kill the fake scheduler if it still runs, close its pipes; its exit status."""
        if self.scheduler.poll() is None:
            self.scheduler.kill()
        code = self.scheduler.wait(30)
        for f in (self.scheduler.stdin, self.scheduler.stdout):
            with contextlib.suppress(BrokenPipeError):
                f.close()
        return code
