"""What turnspec watches of a running SGLang, off the request path: its child processes, the
signal they send when they fail, and its load snapshot.

Death. SGLang 0.5.17 runs its scheduler(s) and detokenizer in child processes
(`Engine.get_all_child_pids()`); requests wait on them over ZMQ, which never says the peer is
gone, so a request in flight when one dies waits forever. SGLang's own remedy is a thread that
polls them every second and sends the parent SIGQUIT, whose handler kills the whole process
tree, this server included: clients see their connections reset, not an error. A scheduler
that catches an exception (a CUDA error in a step) sends that SIGQUIT itself and then exits 0.
Here a `ProcessWatch` sees any child end at once, and SIGQUIT is taken over on the loop (in the
main thread, where a loop may take signals); either calls `on_dead(reason)` once. The engine
then fails its streams; the server decides what follows (server/app.py).

Load. Every `interval_s` a task reads `tokenizer_manager.get_loads()` (shared memory: no round
trip to the scheduler) into EngineStats (engine/sglang_load.py), so `stats()` stays a plain read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from turnspec.engine.process_watch import ProcessExit, ProcessWatch, exit_status
from turnspec.engine.protocol import EngineStats
from turnspec.engine.sglang_load import stats_from_loads

log = logging.getLogger("turnspec.engine")
SIGQUIT_REASON = ("an SGLang child process signalled its failure (SIGQUIT: a scheduler or "
                  "detokenizer hit an exception; its traceback is in the log above)")


class SGLangWatch:
    def __init__(self, interval_s: float, on_dead: Callable[[str], None]) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s: expected > 0 seconds, got {interval_s}")
        self._interval_s = interval_s
        self._on_dead = on_dead
        self._runtime: Any = None
        self._procs: ProcessWatch | None = None
        self._poller: asyncio.Task[None] | None = None
        self._sigquit = False
        self.stats: EngineStats | None = None  # the latest snapshot; None before the first

    def take_sigquit(self) -> None:
        """Handle SIGQUIT on this loop (main thread only; elsewhere a no-op). Called before the
        launch, so a child failing while SGLang starts does not take the process down with
        it, and again after it (SGLang's tokenizer manager installs its own handler)."""
        if threading.current_thread() is not threading.main_thread():
            return
        asyncio.get_running_loop().add_signal_handler(signal.SIGQUIT, self._on_dead,
                                                      SIGQUIT_REASON)
        self._sigquit = True

    def start(self, runtime: Any) -> None:
        """Watch `runtime`'s (an `sglang.Engine`) child processes and poll its load."""
        self._runtime = runtime
        self.take_sigquit()
        pids = list(runtime.get_all_child_pids())
        if pids:
            self._procs = ProcessWatch(pids, self._exited)
            self._procs.start()
        else:
            log.warning("sglang reports no child processes: a dead scheduler would go unseen")
        self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _exited(self, ex: ProcessExit) -> None:
        self._on_dead(f"SGLang's child process {ex.describe()}")

    async def _poll(self) -> None:
        tm = self._runtime.tokenizer_manager
        warned = False
        while True:
            try:
                loads = await tm.get_loads()
                if loads:  # none until the scheduler's first publish
                    self.stats = stats_from_loads([load.to_dict() for load in loads])
            except Exception as e:  # no snapshot published yet, or a shape we do not know
                if not warned:
                    log.warning("sglang load snapshot unreadable (stats() keeps the last one): "
                                "%s: %s", type(e).__name__, e)
                    warned = True
            await asyncio.sleep(self._interval_s)

    async def stop(self, dead: bool = False) -> None:
        """Stop watching (idempotent): before a shutdown that ends the children on purpose.
        `dead`: SIGQUIT is ignored from then on, not reset: SGLang's own watchdog thread may
        still report the dead child (within its 1 s poll) while this process winds down, and
        SIGQUIT's default would dump core instead of the server's exit status."""
        if self._procs is not None:
            self._procs.stop()
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        if self._sigquit:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGQUIT)
            self._sigquit = False
            if dead:
                signal.signal(signal.SIGQUIT, signal.SIG_IGN)

    def kill_children(self) -> list[int]:
        """SIGKILL the children still running, after a death: SGLang's own `shutdown()` waits
        up to 60 s for each to be reaped, and a GPU process wedged by a CUDA error may take
        that long. Returns the pids signalled."""
        killed = []
        for pid in self._procs.pids if self._procs is not None else ():
            if exit_status(pid) is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        return killed
