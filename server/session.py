"""The session layer every transport shares: one `Session` per client connection (a WS
connection) or per call (an HTTP request, a gRPC stream).

`Session.start(TurnRequest)` does everything between the wire and the engine: tools and
tool_choice checks, the grammar (declared as soon as the tools are parsed, prepared off the
request path: server/grammars.py), conversation state (`previous_response_id`), prompt
rendering (KV reuse via `render_continuation`), context-length checks, the per-connection
limit and admission. It raises `ApiError` before anything is streamed, so a transport can
answer with a clean error frame; otherwise it returns a `Turn` to stream.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span

from turnspec.engine.loop_guard import LoopGuard
from turnspec.engine.protocol import DeltaStream, EngineError, GenerateRequest, SamplingParams
from turnspec.server import limits
from turnspec.server.conversation import Conversation, ConversationStore, Message
from turnspec.server.errors import ApiError, invalid
from turnspec.server.events import TurnDone
from turnspec.server.render import render
from turnspec.server.timing import TurnClock
from turnspec.server.turn import Turn, engine_error
from turnspec.tools_grammar.parser import ToolCallStreamParser
from turnspec.tools_grammar.schema import ToolChoice, ToolSpec, parse_tool_choice, parse_tools

if TYPE_CHECKING:
    from turnspec.server.grammars import Declared
    from turnspec.server.hub import SessionHub


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _tools(req: TurnRequest) -> tuple[list[ToolSpec], ToolChoice]:
    try:
        tools = parse_tools(req.tools)
        return tools, parse_tool_choice(req.tool_choice, tools)
    except ValueError as e:
        msg = str(e)
        raise invalid(msg, param=msg.split(":", 1)[0].strip()) from None


@dataclass(slots=True)
class TurnRequest:
    """A transport-neutral turn whose fields the transport has already type-checked.

    `messages` is the whole conversation, or only the new items when `previous_response_id`
    names a turn this session remembers. `tools` / `tool_choice` are raw wire values (Chat
    Completions or Responses form); `instructions` becomes the leading system message.
    """

    messages: list[Message]
    tools: list[Any] | None = None
    tool_choice: Any = None
    instructions: str | None = None
    previous_response_id: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    parallel_tool_calls: bool | None = None  # None: one call per turn (small models chain)
    loop_guard: bool | None = None  # None: the server's --loop-guard setting
    request_id: str | None = None
    spec_block_size: int | None = None
    trace: dict[str, str] | None = None
    received_unix_ms: float = field(default_factory=lambda: time.time() * 1000.0)
    received_perf: float = field(default_factory=time.perf_counter)


class Session:
    """Conversation state and limits of one client connection."""

    def __init__(self, hub: SessionHub, transport: str, *, max_active: int | None = 1,
                 keep_responses: int = 0, session_id: str | None = None) -> None:
        self.hub = hub
        self.transport = transport
        self.max_active = max_active
        self.store = ConversationStore(keep_responses) if keep_responses > 0 else None
        self.session_id = session_id
        self.active: dict[str, Turn] = {}  # response_id -> turn

    async def start(self, req: TurnRequest, *, messages_param: str = "messages") -> Turn:
        """Validate, render, admit. Raises `ApiError` (nothing has been streamed yet).
        `messages_param` names the conversation field in errors ("input" for Responses)."""
        hub, now = self.hub, time.perf_counter()
        clock = TurnClock(received=req.received_perf,
                          received_unix_us=round(req.received_unix_ms * 1000.0))
        clock.hop("receive", req.received_perf, now)
        root = hub.tracer.start(req.trace, clock, self.transport, hub.engine.model_name) \
            if hub.tracer is not None else None
        try:
            return await self._start(req, messages_param, clock, root)
        except ApiError as e:
            hub.rejected(self.transport, e, req.received_perf)
            if root is not None:
                hub.tracer.refused(root, e.code or e.type, e.message, time.perf_counter(), clock)
            raise

    async def _start(self, req: TurnRequest, mp: str, clock: TurnClock,
                     root: Span | None) -> Turn:
        hub = self.hub
        hub.check_accepting()
        hub.admission.check_room()  # shed load before rendering
        if self.max_active is not None and len(self.active) >= self.max_active:
            raise ApiError(409, "invalid_request_error",
                           f"this connection already has {len(self.active)} response(s) in "
                           "progress; wait for it to finish or cancel it first",
                           code="conversation_already_has_active_response")
        limits.check_request(hub.config, req)
        tools, choice = _tools(req)
        # Declared now, compiled on the grammar threads while the prompt renders (or ready
        # already: an earlier turn, another session, --tools-preload): server/grammars.py.
        declared = hub.grammars.declare(tools, choice, bool(req.parallel_tool_calls))
        history, base = self._history(req)
        messages = ([{"role": "system", "content": req.instructions}]
                    if req.instructions else []) + history
        history_ids = (base.token_ids if base is not None
                       and base.instructions == req.instructions else None)
        prompt = await self._prompt(history_ids, messages, tools, mp, clock)
        sampling = self._sampling(req, len(prompt), mp)
        response_id = new_id("resp")
        grammar, parser = await self._tool_grammar(declared, tools, response_id, clock)
        request_id = req.request_id or new_id("req")
        greq = GenerateRequest(
            request_id=request_id, prompt_token_ids=prompt, sampling=sampling, grammar=grammar,
            spec_block_size=(req.spec_block_size if req.spec_block_size is not None
                             else hub.config.spec_block_size),
            session_id=self.session_id, trace=req.trace,
            trace_steps=root is not None and root.is_recording())
        stream = await self._submit(greq, clock)
        turn = Turn(hub, self.transport, greq, stream, response_id=response_id, parser=parser,
                    clock=clock, span=root,
                    on_done=self._remember(history, req.instructions, messages, tools))
        self.active[response_id] = turn
        hub.turn_started(turn, on_close=lambda t: self.active.pop(t.response_id, None))
        return turn

    async def _prompt(self, history_ids: list[int] | None, messages: list[Message],
                      tools: list[ToolSpec], mp: str, clock: TurnClock) -> list[int]:
        """The conversation through the chat template (continuing `history_ids` where the last
        turn left them), off the event loop; its length checked against the limits."""
        t0 = time.perf_counter()
        try:
            prompt, waited = await render(self.hub.chat, history_ids, messages, tools)
        except Exception as e:  # the template's own checks (role order, content types)
            raise invalid(f"the chat template rejected the conversation: {e}",
                          param=mp) from None
        t1 = time.perf_counter()
        clock.hop("template", t0, t1)
        clock.hop("template_wait", t1 - waited, t1)  # of it, on the thread's hop
        limits.check_prompt(self.hub.config, len(prompt), mp)
        return prompt

    async def _tool_grammar(self, declared: Declared | None, tools: list[ToolSpec],
                            response_id: str, clock: TurnClock
                            ) -> tuple[Any, ToolCallStreamParser | None]:
        """The turn's tool-call grammar (declared before the render, so compiled beside it)
        and the parser that streams its calls; (None, None) for a turn without tools."""
        if declared is None:
            return None, None
        t0 = time.perf_counter()  # ~0 when ready; else what is left of the compile
        try:
            grammar = await self.hub.grammars.grammar(declared)
        except Exception as e:  # a schema the grammar compiler cannot take
            raise invalid(f"tools: no tool-call grammar could be built from these schemas "
                          f"({type(e).__name__}: {e})", param="tools",
                          code="invalid_tool_schema") from None
        clock.hop("grammar", t0, time.perf_counter())
        return grammar, ToolCallStreamParser(self.hub.chat.tool_format, tools,
                                             call_id_prefix=f"call_{response_id[5:17]}_")

    async def _submit(self, greq: GenerateRequest, clock: TurnClock) -> DeltaStream:
        """Hand the request to the engine once admission lets it in; a refusal on the way
        gives back what it held."""
        hub = self.hub
        hub.reserve(greq.request_id)
        t0 = time.perf_counter()
        try:
            await hub.admission.acquire()
        except BaseException:
            hub.unreserve(greq.request_id)
            raise
        clock.hop("admission", t0, time.perf_counter())
        try:
            return hub.engine.generate(greq)
        except EngineError as e:
            hub.admission.release()
            hub.unreserve(greq.request_id)
            raise engine_error(e) from None

    def prepare(self, req: TurnRequest) -> str:
        """A warm-up without output (Responses `generate: false`): the turn's tools are checked
        as a turn's are and their grammar is declared (prepared on the grammar threads from
        now on); its input is remembered under a new response id that a later turn continues
        with `previous_response_id`. Returns that id; raises `ApiError`."""
        hub = self.hub
        hub.check_accepting()
        limits.check_request(hub.config, req)
        tools, choice = _tools(req)
        hub.grammars.declare(tools, choice, bool(req.parallel_tool_calls), ahead=True)
        history, _ = self._history(req)
        response_id = new_id("resp")
        if self.store is not None:  # nothing rendered: the next turn renders afresh
            self.store.put(response_id, Conversation(history, [], req.instructions))
        return response_id

    def _history(self, req: TurnRequest) -> tuple[list[Message], Conversation | None]:
        if req.previous_response_id is None:
            return list(req.messages), None
        base = self.store.get(req.previous_response_id) if self.store is not None else None
        if base is None:
            raise ApiError(400, "invalid_request_error",
                           f"previous response {req.previous_response_id!r} not found on this "
                           "connection; send the full conversation without "
                           "previous_response_id", code="previous_response_not_found",
                           param="previous_response_id")
        self.hub.metrics.continued.inc()
        return base.messages + list(req.messages), base

    def _sampling(self, req: TurnRequest, prompt_len: int, mp: str) -> SamplingParams:
        ctx = self.hub.engine.max_context
        room = ctx - prompt_len
        if room < 1:
            raise invalid(f"the prompt is {prompt_len} tokens; this model's context is {ctx} "
                          "tokens and at least one must remain for the output",
                          param=mp, code="context_length_exceeded")
        if req.max_tokens is not None and req.max_tokens > room:
            raise invalid(f"prompt ({prompt_len} tokens) + max output tokens ({req.max_tokens})"
                          f" exceed the context of {ctx} tokens; ask for at most {room}",
                          param="max_tokens", code="context_length_exceeded")
        cfg = self.hub.config
        max_tokens = req.max_tokens or min(cfg.default_max_tokens, room)
        guard = cfg.loop_guard if req.loop_guard is None else req.loop_guard
        try:
            return SamplingParams(
                temperature=req.temperature if req.temperature is not None
                else cfg.default_temperature,
                top_p=req.top_p if req.top_p is not None else cfg.default_top_p,
                top_k=req.top_k or 0, seed=req.seed, max_tokens=max_tokens, stop=req.stop,
                loop_guard=LoopGuard() if guard else None)
        except ValueError as e:
            msg = str(e)
            raise invalid(msg, param=msg.split(":", 1)[0]) from None

    def _remember(self, history: list[Message], instructions: str | None,
                  prompted: list[Message], tools: list[ToolSpec]):
        store, recorder = self.store, self.hub.recorder
        if store is None and recorder is None:
            return None

        def on_done(turn: Turn, done: TurnDone) -> None:
            if done.finish_reason not in ("stop", "length", "tool_calls"):
                return
            msg: Message = {"role": "assistant", "content": done.text}
            if done.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.call_id, "type": "function",
                     "function": {"name": c.name, "arguments": c.arguments_json}}
                    for c in done.tool_calls]
            if store is not None:
                store.put(turn.response_id, Conversation(
                    history + [msg], turn.request.prompt_token_ids + turn.generated_ids,
                    instructions))
            if recorder is not None:  # a queue put: the loop never waits on the disk
                recorder.record(prompted + [msg], [t.to_openai() for t in tools], {
                    "transport": self.transport, "response_id": turn.response_id,
                    "finish_reason": done.finish_reason})

        return on_done

    def find(self, response_id: str | None) -> Turn | None:
        """The active turn `response_id` names (or the only active one when None)."""
        if response_id is None:
            return next(iter(self.active.values()), None)
        return self.active.get(response_id)

    async def close(self) -> None:
        """The connection is gone: stop and release its turns."""
        for turn in list(self.active.values()):
            await turn.close()
