"""Incremental scanner for one call object `{"name": "...", "arguments": {...}}`, char by char.

It finds the call's structure without waiting for the whole object: the name as soon as its
string closes, and the raw text of the arguments value as it arrives (so the parser can stream
it as argument deltas). Keys may come in any order; unknown keys are skipped. It does not check
the syntax of scalar values: the full arguments text is parsed with json.loads at the end.

Feeding one char at a time keeps the result independent of how the text was split into
chunks, which is what the parser's split-invariance property rests on.
"""

from __future__ import annotations

import json

_WS = " \t\r\n"
_VALUE_STARTS = frozenset('"{[-0123456789tfn')

# Scanner states.
_OPEN, _KEY_OR_END, _KEY, _IN_KEY, _COLON, _VALUE, _IN_VALUE, _AFTER_VALUE, _DONE = range(9)


class ValueScanner:
    """Finds where one JSON value ends. push(ch) returns 0 (value continues), 1 (ch ended it,
    consumed) or 2 (value ended just before ch: a scalar's delimiter, not consumed)."""

    __slots__ = ("_kind", "_depth", "_in_string", "_escape")

    def __init__(self, first: str) -> None:
        self._kind = "string" if first == '"' else "nested" if first in "{[" else "scalar"
        self._depth = 1 if self._kind == "nested" else 0
        self._in_string = self._kind == "string"
        self._escape = False

    def push(self, ch: str) -> int:
        if self._in_string:
            if self._escape:
                self._escape = False
            elif ch == "\\":
                self._escape = True
            elif ch == '"':
                self._in_string = False
                return 1 if self._kind == "string" else 0
            return 0
        if self._kind == "scalar":
            return 2 if ch in _WS or ch in ",}]" else 0
        if ch == '"':
            self._in_string = True
        elif ch in "{[":
            self._depth += 1
        elif ch in "}]":
            self._depth -= 1
            if self._depth == 0:
                return 1
        return 0


class CallScanner:
    """State of one call object. After each push: `name` (set once its string is complete),
    `take_arguments()` (raw argument text since the last take), `done`, `error`."""

    __slots__ = (
        "_arguments_keys", "_state", "_key_chars", "_key", "_value", "_value_role", "_value_chars",
        "_pending_args", "arguments_raw", "name", "done", "error", "_seen",
    )

    def __init__(self, arguments_keys: tuple[str, ...]) -> None:
        self._arguments_keys = arguments_keys
        self._state = _OPEN
        self._key_chars: list[str] = []
        self._key = ""
        self._value: ValueScanner | None = None
        self._value_role = ""  # "name", "arguments" or "skip"
        self._value_chars: list[str] = []
        self._pending_args: list[str] = []
        self._seen: set[str] = set()
        self.arguments_raw: str | None = None  # complete raw arguments text, once seen
        self.name: str | None = None
        self.done = False
        self.error: str | None = None

    def take_arguments(self) -> str:
        text = "".join(self._pending_args)
        self._pending_args.clear()
        return text

    def push(self, ch: str) -> None:
        """Consume one character (call only while neither done nor error is set)."""
        state = self._state
        if state == _IN_VALUE:
            self._push_value(ch)
        elif state == _IN_KEY:
            self._key_chars.append(ch)
            if ch == '"' and not _escaped(self._key_chars):
                try:
                    self._key = json.loads('"' + "".join(self._key_chars))
                except json.JSONDecodeError:
                    self._fail("invalid key string " + '"' + "".join(self._key_chars))
                    return
                self._state = _COLON
        elif ch in _WS:
            return
        elif state == _OPEN:
            self._expect(ch == "{", "expected '{' to open the call object", ch, _KEY_OR_END)
        elif state in (_KEY_OR_END, _KEY):
            if ch == "}" and state == _KEY_OR_END:
                self._finish()
            elif ch == '"':
                self._key_chars = []
                self._state = _IN_KEY
            else:
                self._fail(f"expected a key string, got {ch!r}")
        elif state == _COLON:
            self._expect(ch == ":", "expected ':' after a key", ch, _VALUE)
        elif state == _VALUE:
            self._start_value(ch)
        elif state == _AFTER_VALUE:
            if ch == ",":
                self._state = _KEY
            elif ch == "}":
                self._finish()
            else:
                self._fail(f"expected ',' or '}}' after a value, got {ch!r}")

    def _expect(self, ok: bool, message: str, ch: str, next_state: int) -> None:
        if ok:
            self._state = next_state
        else:
            self._fail(f"{message}, got {ch!r}")

    def _fail(self, message: str) -> None:
        self.error = message

    def _start_value(self, ch: str) -> None:
        if ch not in _VALUE_STARTS:
            self._fail(f"expected a JSON value, got {ch!r}")
            return
        key = self._key
        if key in self._seen and (key == "name" or key in self._arguments_keys):
            self._fail(f"key {key!r} appears twice")
            return
        self._seen.add(key)
        if key == "name":
            self._value_role = "name"
        elif key in self._arguments_keys:
            if self.arguments_raw is not None:
                self._fail("the call has two arguments objects")
                return
            self._value_role = "arguments"
        else:
            self._value_role = "skip"
        self._value = ValueScanner(ch)
        self._value_chars = []
        self._state = _IN_VALUE
        self._push_value(ch, first=True)

    def _push_value(self, ch: str, first: bool = False) -> None:
        assert self._value is not None
        status = 0 if first else self._value.push(ch)
        if status == 2:  # a scalar ended before this char: finish it, then re-read the char
            self._end_value()
            self.push(ch)
            return
        self._value_chars.append(ch)
        if self._value_role == "arguments":
            self._pending_args.append(ch)
        if status == 1:
            self._end_value()

    def _end_value(self) -> None:
        raw = "".join(self._value_chars)
        self._state = _AFTER_VALUE
        if self._value_role == "name":
            try:
                name = json.loads(raw)
            except json.JSONDecodeError:
                name = None
            if not isinstance(name, str):
                self._fail(f"'name' must be a string, got {raw}")
                return
            self.name = name
        elif self._value_role == "arguments":
            self.arguments_raw = raw

    def _finish(self) -> None:
        self._state = _DONE
        self.done = True


def _escaped(chars: list[str]) -> bool:
    """Whether the last char (a quote) is escaped by an odd run of backslashes before it."""
    count = 0
    for ch in reversed(chars[:-1]):
        if ch != "\\":
            break
        count += 1
    return count % 2 == 1
