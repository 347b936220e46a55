"""The OpenAI Python SDK against turnspec: streaming chat completions with tools.

    make serve                                   # another terminal: 127.0.0.1:8000
    python examples/openai_sdk.py                # the default script (examples/agent_tools.py)
    python examples/openai_sdk.py --script -     # type the caller's lines

Each turn streams the reply as it comes; a tool call is streamed as argument deltas, run
locally, and its result sent back for the spoken answer (tool_choice none after it, unless
--auto-tools: a 135M model calls the same tool again and again under auto). A `[barge-in]`
line's reply is cut off by closing its stream; the server sees the client leave and stops. The last chunk of every completion
carries turnspec's timing block (`turnspec.timing`), printed under the reply.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from openai import OpenAI

from agent_tools import (
    BARGE_IN_AFTER,
    SYSTEM,
    TOOLS,
    Line,
    run_tool,
    script_lines,
    timing_line,
)

MAX_TOOL_ROUNDS = 3  # then the model must answer in words
OPENAI_TOOLS = [{"type": "function", "function": {"name": name, "description": desc,
                                                  "parameters": params}}
                for name, (desc, params) in TOOLS.items()]


def stream_once(client: OpenAI, messages: list[dict], tool_choice: str | dict,
                max_tokens: int, barge_in: bool) -> dict:
    """One streamed completion -> {text, tool_calls, finish_reason, timing, ttft_ms,
    interrupted}. `barge_in`: close the stream after BARGE_IN_AFTER text pieces (the server
    sees the client leave and stops generating)."""
    start, first = time.perf_counter(), None
    text, calls, finish, timing, interrupted = [], {}, None, None, False
    stream = client.chat.completions.create(
        model="turnspec", messages=messages, tools=OPENAI_TOOLS, tool_choice=tool_choice,
        max_tokens=max_tokens, temperature=0, stream=True)
    for chunk in stream:
        extra = chunk.model_extra or {}
        if "timing" in (extra.get("turnspec") or {}):
            timing = extra["turnspec"]["timing"]
        for choice in chunk.choices:
            delta = choice.delta
            if (delta.content or delta.tool_calls) and first is None:
                first = time.perf_counter()
            if delta.content:
                text.append(delta.content)
                print(delta.content, end="", flush=True)
                if barge_in and len(text) == BARGE_IN_AFTER:  # the caller starts talking
                    print(" [barge-in]", end="", flush=True)
                    stream.close()
                    interrupted = True
                    break
            for tc in delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.id or call["id"]
                if tc.function is not None:
                    call["name"] += tc.function.name or ""
                    call["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
        if interrupted:
            break
    return {"text": "".join(text), "tool_calls": [calls[i] for i in sorted(calls)],
            "finish_reason": finish, "timing": timing, "interrupted": interrupted,
            "ttft_ms": None if first is None else round((first - start) * 1000, 1)}


def turn(client: OpenAI, messages: list[dict], line: Line, max_tokens: int,
         auto_tools: bool) -> list[dict]:
    """The caller's line -> completions until one answers in words (tools run between)."""
    messages.append({"role": "user", "content": line.text})
    free = "auto" if auto_tools else "none"
    choice: str | dict = {"type": "function", "function": {"name": line.tool}} \
        if line.tool else free
    out = []
    for rounds in range(1, MAX_TOOL_ROUNDS + 2):
        print("bot> ", end="", flush=True)
        r = stream_once(client, messages, choice, max_tokens, line.barge_in)
        out.append(r)
        if not r["tool_calls"]:
            # a reply cut off by a barge-in keeps the words already spoken
            messages.append({"role": "assistant", "content": r["text"]})
            print(f"\n     client ttft {r['ttft_ms']} ms | {timing_line(r['timing'])}")
            return out
        messages.append({"role": "assistant", "content": r["text"] or None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in r["tool_calls"]]})
        for c in r["tool_calls"]:
            c["result"] = run_tool(c["name"], json.loads(c["arguments"] or "{}"))
            print(f"[{c['name']}({c['arguments']}) -> {json.dumps(c['result'])}]")
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": json.dumps(c["result"])})
        print(f"     client ttft {r['ttft_ms']} ms | {timing_line(r['timing'])}")
        # the answer after the result: words, or another call while rounds remain
        choice = free if rounds < MAX_TOOL_ROUNDS else "none"
    raise AssertionError("unreachable: the last round runs with tool_choice none")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    p.add_argument("--api-key", default=os.environ.get("TURNSPEC_API_KEY", "unused"))
    p.add_argument("--script", default=None, help="caller lines, one a line; - for stdin")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--auto-tools", action="store_true",
                   help="let the model call tools on any turn (tool_choice auto); without it, "
                        "only the script's [tool] lines call one, as a 135M model needs")
    p.add_argument("--json", default=None, help="write the turns here too")
    args = p.parse_args()
    client = OpenAI(base_url=args.base_url, api_key=args.api_key)
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    turns = []
    for line in script_lines(args.script):
        print(f"you> {line.text}")
        turns.append({"user": line.text, "forced_tool": line.tool,
                      "completions": turn(client, messages, line, args.max_tokens,
                                           args.auto_tools)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"turns": turns, "messages": messages}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
