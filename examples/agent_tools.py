"""What the three examples share: two tools that run locally, and the scripted conversation.

A script is one caller line per line of a file (`-` reads them as you type them). A line that
starts with `[tool_name]` makes that turn call the tool (tool_choice names it), for models
too small to choose a tool on their own, such as the default SmolLM2-135M; a larger model
picks tools itself under `tool_choice: auto` (each example's --auto-tools). A line that starts
with `[barge-in]` is cut off by the caller: once the reply has streamed BARGE_IN_AFTER text
pieces, the example stops it (gRPC Abort, pipecat's InterruptionFrame, closing the HTTP
stream) and keeps the words already said. Blank lines and `#` comments are skipped.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SYSTEM = ("You are the phone assistant of Chez Alex, a restaurant in Paris. Answer in one or "
          "two short spoken sentences.")

DEFAULT_SCRIPT = """\
Hi! What can you help me with?
[barge-in] Tell me the whole story of the restaurant, from the very beginning.
[get_weather] Sorry to cut in. What's the weather in Paris tonight? We might sit outside.
[book_table] Book a table for two at seven tonight, under the name Alex.
Thanks, that's all.
"""
BARGE_IN_AFTER = 5  # text pieces streamed before a [barge-in] line's caller speaks again

# JSON Schema of each tool's arguments, and a one-line description for the model.
TOOLS = {
    "get_weather": ("Get the current weather for a city",
                    {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}),
    "book_table": ("Book a table at the restaurant",
                   {"type": "object",
                    "properties": {"name": {"type": "string"},
                                   "party_size": {"type": "integer", "minimum": 1,
                                                  "maximum": 12},
                                   "time": {"type": "string"}},
                    "required": ["name", "party_size", "time"]}),
}


def get_weather(city: str) -> dict:
    """Stands in for a weather API: a fixed answer per city."""
    seed = int(hashlib.sha256(city.strip().lower().encode()).hexdigest(), 16)
    return {"city": city, "temperature_c": 12 + seed % 15,
            "conditions": ("sunny", "cloudy", "light rain")[seed % 3]}


def book_table(name: str, party_size: int, time: str) -> dict:
    """Stands in for a booking system: confirms with a code derived from the request."""
    code = hashlib.sha256(f"{name}|{party_size}|{time}".encode()).hexdigest()[:6].upper()
    return {"status": "confirmed", "name": name, "party_size": party_size, "time": time,
            "confirmation": code}


def run_tool(name: str, arguments: dict) -> dict:
    """Execute a tool call locally; an unknown tool or bad arguments come back as an error
    result for the model to read, as an agent would hand them back."""
    funcs = {"get_weather": get_weather, "book_table": book_table}
    if name not in funcs:
        return {"error": f"unknown tool {name!r}"}
    try:
        return funcs[name](**arguments)
    except TypeError as e:
        return {"error": f"{name}: bad arguments: {e}"}


@dataclass(slots=True, frozen=True)
class Line:
    text: str
    tool: str | None = None  # force this tool on this turn
    barge_in: bool = False   # the caller cuts the reply off (BARGE_IN_AFTER)


def parse_script(text: str) -> list[Line]:
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        m = re.fullmatch(r"\[([\w-]+)\]\s*(.+)", raw)
        if m is None:
            out.append(Line(raw))
        elif m[1] == "barge-in":
            out.append(Line(m[2], barge_in=True))
        elif m[1] in TOOLS:
            out.append(Line(m[2], tool=m[1]))
        else:
            raise ValueError(f"script line {n}: unknown marker [{m[1]}]; expected [barge-in] "
                             f"or a tool: {', '.join(f'[{t}]' for t in TOOLS)}")
    return out


def script_lines(path: str | None) -> Iterator[Line]:
    """The lines of `path` (None: the default script; `-`: typed on stdin, read as typed)."""
    if path == "-":
        for raw in sys.stdin:
            yield from parse_script(raw)
        return
    yield from parse_script(DEFAULT_SCRIPT if path is None else Path(path).read_text())


def timing_line(timing: dict | None) -> str:
    """The server's timing block, in one line (ms)."""
    if not timing:
        return "server: no timing block"
    keys = (("server_ttft_ms", "ttft"), ("ttfs_ms", "first sentence"),
            ("tool_call_ms", "tool call"), ("queue_ms", "queue"), ("prefill_ms", "prefill"),
            ("decode_ms", "decode"), ("host_overhead_ms", "host"), ("server_e2e_ms", "e2e"))
    parts = [f"{label} {timing[k]:.0f}" for k, label in keys if timing.get(k) is not None]
    return "server ms: " + ", ".join(parts)
