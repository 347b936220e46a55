"""Streaming tool-call parser: text deltas in, typed events out.

    parser = ToolCallStreamParser("hermes", tools, call_id_prefix=f"call_{response_id}_")
    for delta in detokenized_deltas:
        for event in parser.feed(delta): ...
    for event in parser.finish(): ...

Events: TextDelta (speak it), ToolCallStarted (name known), ToolCallArgumentsDelta (raw JSON of
the arguments as emitted; the deltas of a call concatenate to its arguments_json),
ToolCallDone (arguments parsed and validated against the tool's schema) or ToolCallInvalid
(only possible without a grammar, e.g. auto mode on an unconstrained backend).

Text outside calls streams at once; only a suffix that could be the start of a call tag
("<tool_c") is held back. Done is emitted when the call's JSON object closes, before the
closing tag arrives. The input is processed as a sequence of characters with no dependence
on chunk boundaries, so any split of a stream yields the same events once adjacent text (and
same-call argument) deltas are merged. Call ids are f"{call_id_prefix}{index}": give each
response its own prefix to keep ids unique within a conversation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from turnspec.tools_grammar.call_scanner import CallScanner
from turnspec.tools_grammar.formats import PYTHON_TAG, ToolCallFormat, get_format
from turnspec.tools_grammar.schema import ToolSpec, validate_arguments


@dataclass(slots=True, frozen=True)
class TextDelta:
    text: str


@dataclass(slots=True, frozen=True)
class ToolCallStarted:
    index: int
    call_id: str
    name: str


@dataclass(slots=True, frozen=True)
class ToolCallArgumentsDelta:
    index: int
    call_id: str
    delta: str


@dataclass(slots=True, frozen=True)
class ToolCallDone:
    index: int
    call_id: str
    name: str
    arguments_json: str
    arguments: dict


@dataclass(slots=True, frozen=True)
class ToolCallInvalid:
    index: int
    call_id: str
    raw: str
    error: str


ParseEvent = TextDelta | ToolCallStarted | ToolCallArgumentsDelta | ToolCallDone | ToolCallInvalid

TRUNCATED = "the stream ended inside a tool call"  # ToolCallInvalid.error when output stops mid-call
_WS = " \t\r\n"
_START, _TEXT, _CALL, _AFTER_CALL, _SKIP, _CLOSED = range(6)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of text that is a proper prefix of tag."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ToolCallStreamParser:
    """Parses one assistant message as it streams (see module docstring)."""

    def __init__(self, fmt: ToolCallFormat | str, tools: list[ToolSpec] | None = None, call_id_prefix: str = "call_") -> None:
        self._fmt = get_format(fmt) if isinstance(fmt, str) else fmt
        self._tools = None if tools is None else {t.name: t for t in tools}
        self._prefix = call_id_prefix
        self._tagged = self._fmt.call_open is not None
        self._state = _TEXT if self._tagged else _START
        self._events: list[ParseEvent] = []
        self._held = ""  # text that may still turn out to be (part of) a tag
        self._pending_ws = ""  # whitespace right after a call: dropped unless text follows
        self._after_call = False
        self._index = 0
        self._scanner: CallScanner | None = None
        self._raw: list[str] = []
        self._started = False
        self._reject: str | None = None

    @property
    def _call_id(self) -> str:
        return f"{self._prefix}{self._index}"

    def feed(self, text: str) -> list[ParseEvent]:
        if self._state == _CLOSED:
            raise RuntimeError("ToolCallStreamParser.feed after finish()")
        buf, self._held = self._held + text, ""
        while buf:
            buf = self._step(buf)
        return self._drain()

    def finish(self) -> list[ParseEvent]:
        """End of stream: flush held-back text; an unfinished call becomes ToolCallInvalid."""
        state, held = self._state, self._held
        self._held = ""
        if state in (_TEXT, _START) and held:
            self._emit_text(held)
        elif state == _CALL:
            self._invalid(TRUNCATED)
        elif state == _SKIP:
            self._invalid(self._scanner.error if self._scanner else "malformed tool call")
        self._state = _CLOSED
        return self._drain()

    # -- one state at a time; each returns the unconsumed rest of buf --------------------------

    def _step(self, buf: str) -> str:
        if self._state == _TEXT:
            return self._text(buf)
        if self._state == _CALL:
            return self._call(buf)
        if self._state == _AFTER_CALL:
            return self._after(buf)
        if self._state == _SKIP:
            return self._skip(buf)
        return self._start(buf)

    def _text(self, buf: str) -> str:
        tag = self._fmt.call_open
        if not self._tagged:
            self._emit_text(buf)
            return ""
        at = buf.find(tag)
        if at >= 0:
            self._emit_text(buf[:at])
            self._begin_call(tag)
            return buf[at + len(tag):]
        keep = _partial_suffix(buf, tag)
        self._emit_text(buf[:len(buf) - keep])
        self._held = buf[len(buf) - keep:]
        return ""

    def _start(self, buf: str) -> str:
        """Whole-message formats: leading whitespace and <|python_tag|> decide nothing yet;
        the first other character says call ('{') or text (anything else)."""
        body = buf.lstrip(_WS)
        if body.startswith(PYTHON_TAG):
            body = body[len(PYTHON_TAG):].lstrip(_WS)
        if not body or (PYTHON_TAG.startswith(body) and buf.lstrip(_WS) == body):
            self._held = buf
            return ""
        if body[0] == "{":
            self._begin_call("")
            return body
        self._state = _TEXT
        return buf

    def _call(self, buf: str) -> str:
        scanner = self._scanner
        assert scanner is not None
        for i, ch in enumerate(buf):
            self._raw.append(ch)
            scanner.push(ch)
            if scanner.name is not None and not self._started and self._reject is None:
                self._on_name(scanner.name)
            if self._started:
                delta = scanner.take_arguments()
                if delta:
                    self._emit(ToolCallArgumentsDelta(self._index, self._call_id, delta))
            if scanner.error is not None:
                self._state = _SKIP
                return buf[i + 1:]
            if scanner.done:
                self._complete()
                return buf[i + 1:]
        return ""

    def _after(self, buf: str) -> str:
        """After a call's JSON object: its closing tag (tagged) or more calls (whole message)."""
        body = buf.lstrip(_WS + ("" if self._tagged else ";"))
        if not body:
            return ""
        close = self._fmt.call_close
        if self._tagged and close:
            if body.startswith(close):
                self._state = _TEXT
                return body[len(close):]
            if close.startswith(body):
                self._held = body
                return ""
        elif body[0] == "{":
            self._begin_call("")
            return body
        self._state = _TEXT  # no closing tag: tolerate it and read on as text
        return body

    def _skip(self, buf: str) -> str:
        """A malformed call: swallow text up to the closing tag (or the end), then report it."""
        close = self._fmt.call_close
        before = len(self._raw)
        self._raw.extend(buf)
        if not (self._tagged and close):
            return ""
        joined = "".join(self._raw)
        at = joined.find(close, max(0, before - len(close)))
        if at < 0:
            return ""
        rest = joined[at + len(close):]
        del self._raw[at + len(close):]
        assert self._scanner is not None
        self._invalid(self._scanner.error or "malformed tool call")
        self._state = _TEXT
        return rest

    # -- call bookkeeping ---------------------------------------------------------------------

    def _begin_call(self, open_tag: str) -> None:
        self._pending_ws = ""
        self._after_call = False
        self._scanner = CallScanner(self._fmt.arguments_keys)
        self._raw = list(open_tag)  # one char per item, so list and joined indices agree
        self._started = False
        self._reject = None
        self._state = _CALL

    def _on_name(self, name: str) -> None:
        if self._tools is not None and name not in self._tools:
            known = ", ".join(self._tools) or "none"
            self._reject = f"unknown tool {name!r} (known: {known})"
            return
        self._started = True
        self._emit(ToolCallStarted(self._index, self._call_id, name))

    def _complete(self) -> None:
        scanner = self._scanner
        assert scanner is not None
        if scanner.name is None:
            return self._invalid("the call object has no 'name'")
        if self._reject is not None:
            return self._invalid(self._reject)
        arguments_json = scanner.arguments_raw if scanner.arguments_raw is not None else "{}"
        try:
            arguments = json.loads(arguments_json)
        except json.JSONDecodeError as exc:
            return self._invalid(f"arguments are not valid JSON: {exc.msg} at {exc.pos}")
        try:
            if self._tools is not None:
                validate_arguments(self._tools[scanner.name], arguments)
            elif not isinstance(arguments, dict):
                raise ValueError(f"{scanner.name}.arguments: expected a JSON object")
        except ValueError as exc:
            return self._invalid(str(exc))
        self._emit(ToolCallDone(self._index, self._call_id, scanner.name, arguments_json, arguments))
        self._end_call()

    def _invalid(self, error: str) -> None:
        self._emit(ToolCallInvalid(self._index, self._call_id, "".join(self._raw), error))
        self._end_call()

    def _end_call(self) -> None:
        self._index += 1
        self._scanner = None
        self._raw = []
        self._state = _AFTER_CALL
        self._after_call = True

    # -- event output ---------------------------------------------------------------------------

    def _emit_text(self, text: str) -> None:
        if not text:
            return
        if self._after_call:
            if not text.lstrip(_WS):
                self._pending_ws += text
                return
            text, self._pending_ws, self._after_call = self._pending_ws + text, "", False
        self._emit(TextDelta(text))

    def _emit(self, event: ParseEvent) -> None:
        last = self._events[-1] if self._events else None
        if isinstance(event, TextDelta) and isinstance(last, TextDelta):
            self._events[-1] = TextDelta(last.text + event.text)
        elif isinstance(event, ToolCallArgumentsDelta) and isinstance(last, ToolCallArgumentsDelta) and last.index == event.index:
            self._events[-1] = ToolCallArgumentsDelta(event.index, event.call_id, last.delta + event.delta)
        else:
            self._events.append(event)

    def _drain(self) -> list[ParseEvent]:
        events, self._events = self._events, []
        return events
