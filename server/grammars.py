"""Tool-set grammars, prepared off the request path and shared by every session.

A turn's grammar depends on its tool set and shape (tool_choice mode and function name,
parallel calls). `ToolGrammars.declare()` runs on the event loop the moment a session has
parsed a turn's tools, before the template renders the prompt, and at start for each tool set
of `--tools-preload`. It starts the preparation on the server's grammar thread pool and keeps
its future under the shape's key, so sessions with the same tools share one compile, and a
shape declared before compiles nothing again. `grammar()` hands the turn its grammar: at once
when the future is done; otherwise the turn awaits the compile still running (the loop serves
everything else meanwhile) and the wait is counted in `stats.waited`.

For an engine that takes only the structural tag (`Engine.takes_structural_tag`: SGLang
compiles and caches it itself), only the tag is built here: nothing is compiled twice. A shape
declared ahead of its turns (a warm-up, `--tools-preload`) is also handed to the engine's
`prepare_grammar`, so the backend's own compile is done before the first turn too; a turn's
own declaration is not (its request reaches the backend a moment later and compiles there).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnspec.tools_grammar.schema import (
    ToolChoice,
    ToolSpec,
    parse_tool_choice,
    parse_tools,
    tools_hash,
)

log = logging.getLogger("turnspec.server")
Key = tuple[str, str, str | None, bool]  # (tool-set hash, mode, function name, parallel)
# a tool set named in a preload file without its tool_choice: the shapes a voice agent's turns
# take (free turns, and turns that must call)
PRELOAD_CHOICES = ("auto", "required")


@dataclass(slots=True, frozen=True)
class ToolSetShape:
    """One tool set and request shape whose grammar can be prepared ahead of its turns."""

    tools: tuple[ToolSpec, ...]
    choice: ToolChoice
    parallel_tool_calls: bool = False

    def __post_init__(self) -> None:
        if not self.tools or self.choice.mode == "none":
            raise ValueError("a tool-set shape needs tools and a tool_choice other than 'none' "
                             "(those turns have no grammar)")


@dataclass(slots=True)
class GrammarStats:
    declared: int = 0  # shapes whose preparation was started
    ready: int = 0  # turns whose grammar was ready when they needed it
    waited: int = 0  # turns that awaited a preparation still running
    backend_prepared: int = 0  # shapes handed to the engine's prepare_grammar ahead of turns
    threads: set[str] = field(default_factory=set)  # where preparations ran


@dataclass(slots=True, frozen=True)
class Declared:
    key: Key
    future: Future[Any]


class ToolGrammars:
    """The server's grammar preparations (see the module docstring). Call `declare` and
    `grammar` on the event loop thread only."""

    def __init__(self, chat: Any, *, structural_tag_only: bool, workers: int = 2,
                 max_entries: int = 1024,
                 prepare_backend: Callable[[Any], Awaitable[None]] | None = None) -> None:
        if workers < 1 or max_entries < 1:
            raise ValueError(f"expected workers >= 1 and max_entries >= 1, got {workers}, "
                             f"{max_entries}")
        self._chat = chat
        self.structural_tag_only = structural_tag_only
        self._max = max_entries
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="turnspec-grammar")
        self._futures: OrderedDict[Key, Future[Any]] = OrderedDict()
        self._backend = prepare_backend if structural_tag_only else None
        self._at_backend: set[Key] = set()  # shapes the backend has been sent (turn or ahead)
        self._ahead: dict[Key, asyncio.Task[None]] = {}
        self.stats = GrammarStats()

    def declare(self, tools: list[ToolSpec] | tuple[ToolSpec, ...], choice: ToolChoice,
                parallel_tool_calls: bool = False, *, ahead: bool = False) -> Declared | None:
        """Start preparing this shape's grammar unless it is ready or under way; None when the
        output is unconstrained (no tools, or tool_choice none). `ahead`: declared before its
        turns (a warm-up, a preload), so the backend prepares it too."""
        if not tools or choice.mode == "none":
            return None
        key = (tools_hash(list(tools)), choice.mode, choice.name, parallel_tool_calls)
        fut = self._futures.get(key)
        if fut is not None:
            self._futures.move_to_end(key)
        else:
            fut = self._pool.submit(self._prepare, list(tools), choice, parallel_tool_calls)
            self._futures[key] = fut
            self.stats.declared += 1
            self._evict()
        if ahead and self._backend is not None and key not in self._at_backend:
            self._at_backend.add(key)
            self._ahead[key] = asyncio.ensure_future(self._prepare_backend(key, fut))
        return Declared(key, fut)

    async def _prepare_backend(self, key: Key, fut: Future[Any]) -> None:
        assert self._backend is not None
        try:
            await self._backend(await asyncio.wrap_future(fut))
            self.stats.backend_prepared += 1
        except Exception as e:  # the turn will compile it there as it arrives
            self._at_backend.discard(key)
            log.warning("the engine could not prepare a declared grammar ahead of its turn: "
                        "%s: %s", type(e).__name__, e)
        finally:
            self._ahead.pop(key, None)

    @property
    def pending(self) -> int:
        """Preparations under way (declared, not finished)."""
        return sum(not f.done() for f in self._futures.values())

    def _prepare(self, tools: list[ToolSpec], choice: ToolChoice, parallel: bool) -> Any:
        self.stats.threads.add(threading.current_thread().name)
        chat = self._chat
        if self.structural_tag_only:
            return chat.grammar_compiler.structural_tag(tools, choice, chat.tool_format,
                                                        parallel_tool_calls=parallel)
        return chat.grammar_compiler.prepare(tools, choice, chat.tool_format,
                                             parallel_tool_calls=parallel)

    def _evict(self) -> None:
        """Forget the oldest finished preparations past `max_entries` (never one under way)."""
        while len(self._futures) > self._max:
            old = next((k for k, f in self._futures.items() if f.done()), None)
            if old is None:
                return
            del self._futures[old]
            self._at_backend.discard(old)

    async def grammar(self, declared: Declared) -> Any:
        """The turn's grammar: a fresh matcher over the compiled grammar (embedded engine), or
        the shared structural tag. Raises what the preparation raised (a schema xgrammar
        cannot take); that preparation is forgotten, so a later turn tries again."""
        fut = declared.future
        self._at_backend.add(declared.key)  # this turn's request carries it there
        if fut.done():
            self.stats.ready += 1
        else:
            self.stats.waited += 1
        try:
            prepared = fut.result() if fut.done() else await asyncio.wrap_future(fut)
        except Exception:
            if self._futures.get(declared.key) is fut:
                del self._futures[declared.key]
            raise
        return prepared if self.structural_tag_only else prepared.matcher()

    async def preload(self, shapes: tuple[ToolSetShape, ...]) -> int:
        """Declare every shape and wait until all are prepared; returns how many there were."""
        pending = [self.declare(s.tools, s.choice, s.parallel_tool_calls, ahead=True)
                   for s in shapes]
        for shape, declared in zip(shapes, pending, strict=True):
            try:
                await asyncio.wrap_future(declared.future)
            except Exception as e:
                names = ", ".join(t.name for t in shape.tools)
                raise ValueError(f"--tools-preload: no tool-call grammar for the tools "
                                 f"[{names}] ({shape.choice.mode}): {type(e).__name__}: {e}"
                                 ) from None
        await asyncio.gather(*list(self._ahead.values()))  # the backend's own compiles
        return len(pending)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def load_tool_sets(path: str | Path) -> tuple[ToolSetShape, ...]:
    """`--tools-preload FILE`: one tool set per line (blank lines skipped), either a JSON array
    of tools (Chat Completions or Responses form; prepared for tool_choice auto and required),
    or an object `{"tools": [...], "tool_choice"?: one value or a list, "parallel_tool_calls"?:
    bool}`. Raises ValueError naming the file, line and field on bad input."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--tools-preload {path}: cannot read it ({e})") from None
    shapes: list[ToolSetShape] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            raise ValueError(f"--tools-preload {path}:{n}: not JSON ({e})") from None
        try:
            shapes.extend(_line_shapes(record))
        except ValueError as e:
            raise ValueError(f"--tools-preload {path}:{n}: {e}") from None
    if not shapes:
        raise ValueError(f"--tools-preload {path}: no tool sets in it; expected one JSON array "
                         "of tools (or an object with 'tools') per line")
    return tuple(shapes)


def _line_shapes(record: Any) -> list[ToolSetShape]:
    if isinstance(record, list):
        record = {"tools": record}
    if not isinstance(record, dict) or "tools" not in record:
        raise ValueError(f"expected a JSON array of tools or an object with 'tools', got "
                         f"{json.dumps(record)[:80]}")
    if not isinstance(record["tools"], list):
        raise ValueError(f"tools: expected an array of tools, got "
                         f"{type(record['tools']).__name__}")
    unknown = set(record) - {"tools", "tool_choice", "parallel_tool_calls"}
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; expected tools, tool_choice, "
                         "parallel_tool_calls")
    tools = parse_tools(record["tools"])
    if not tools:
        raise ValueError("tools: expected at least one tool")
    parallel = record.get("parallel_tool_calls", False)
    if not isinstance(parallel, bool):
        raise ValueError(f"parallel_tool_calls: expected true or false, got {parallel!r}")
    choices = record.get("tool_choice", list(PRELOAD_CHOICES))
    choices = choices if isinstance(choices, list) else [choices]
    out = []
    for raw in choices:
        choice = parse_tool_choice(raw, tools)
        if choice.mode == "none":
            raise ValueError("tool_choice: 'none' has no grammar to prepare")
        out.append(ToolSetShape(tuple(tools), choice, parallel))
    return out
