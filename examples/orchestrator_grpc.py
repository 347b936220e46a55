"""An agent loop over turnspec's gRPC API: tools run locally, barge-in aborts the reply.

    make serve                                       # another terminal: gRPC on 127.0.0.1:50051
    python examples/orchestrator_grpc.py             # the default script (examples/agent_tools.py)
    python examples/orchestrator_grpc.py --script -  # type the caller's lines

Each turn is one server-streaming `turnspec.v1.Generation/Generate` carrying the whole
conversation (the server's prefix cache reuses the earlier turns' KV): text deltas print as
they come, a tool call arrives as argument deltas and a `done` delta with the parsed JSON, is
run locally, and its result goes back as a `tool` message. A `[barge-in]` line's reply is
stopped mid-stream with `Abort(request_id)`, as an orchestrator does when the caller starts
talking; the words already spoken stay in the conversation. The stubs are turnspec's
(`server/proto/turnspec/v1/generation.proto`; generate your own with grpcio-tools).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import uuid

import grpc

from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

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
PB_TOOLS = [pb.Tool(name=name, description=desc, parameters_json=json.dumps(params))
            for name, (desc, params) in TOOLS.items()]


class Agent:
    def __init__(self, channel: grpc.Channel, api_key: str | None, max_tokens: int,
                 auto_tools: bool) -> None:
        self.stub = pb_grpc.GenerationStub(channel)
        self.metadata = [("authorization", f"Bearer {api_key}")] if api_key else []
        self.max_tokens, self.auto_tools = max_tokens, auto_tools
        self.messages = [pb.Message(role="system", content=SYSTEM)]

    def generate(self, choice: pb.ToolChoice, barge_in: bool) -> dict:
        """One Generate stream -> {text, tool_calls, finish_reason, timing, aborted}."""
        request_id = f"agent-{uuid.uuid4().hex[:12]}"
        stream = self.stub.Generate(pb.GenerateRequest(
            request_id=request_id, messages=self.messages, tools=PB_TOOLS, tool_choice=choice,
            sampling=pb.SamplingParams(temperature=0.0, max_tokens=self.max_tokens)),
            metadata=self.metadata, timeout=300)
        text, calls, pieces, aborted = [], [], 0, None
        out = {"finish_reason": None, "timing": None}
        for msg in stream:
            kind = msg.WhichOneof("kind")
            if kind == "delta":
                text.append(msg.delta.text)
                print(msg.delta.text, end="", flush=True)
                pieces += 1
                if barge_in and pieces == BARGE_IN_AFTER:  # the caller starts talking
                    aborted = threading.Thread(target=self.abort, args=(request_id,))
                    aborted.start()  # from another thread: this one keeps reading
            elif kind == "tool_call_delta" and msg.tool_call_delta.done:
                d = msg.tool_call_delta
                if d.error:  # the server could not parse it: never execute it
                    print(f"[unparsable tool call {d.name}: {d.error}]")
                    continue
                calls.append({"id": d.call_id, "name": d.name, "arguments": d.arguments_json})
            elif kind == "complete":
                out["finish_reason"] = msg.complete.finish_reason
                out["timing"] = json.loads(_json(msg.complete.timing))
        if aborted is not None:
            aborted.join()
        return {**out, "text": "".join(text), "tool_calls": calls,
                "aborted": aborted is not None}

    def abort(self, request_id: str) -> None:
        found = self.stub.Abort(pb.AbortRequest(request_id=request_id),
                                metadata=self.metadata, timeout=30).found
        print(f" [barge-in: Abort found={found}]", end="", flush=True)

    def turn(self, line: Line) -> list[dict]:
        """The caller's line -> Generate calls until one answers in words."""
        self.messages.append(pb.Message(role="user", content=line.text))
        free = pb.ToolChoice(mode="auto" if self.auto_tools else "none")
        choice = pb.ToolChoice(function_name=line.tool) if line.tool else free
        out = []
        for rounds in range(1, MAX_TOOL_ROUNDS + 2):
            print("bot> ", end="", flush=True)
            r = self.generate(choice, line.barge_in)
            out.append(r)
            self.messages.append(pb.Message(role="assistant", content=r["text"], tool_calls=[
                pb.ToolCall(id=c["id"], name=c["name"], arguments_json=c["arguments"])
                for c in r["tool_calls"]]))
            if not r["tool_calls"]:
                print(f"\n     {r['finish_reason']} | {timing_line(r['timing'])}")
                return out
            for c in r["tool_calls"]:
                c["result"] = run_tool(c["name"], json.loads(c["arguments"]))
                print(f"[{c['name']}({c['arguments']}) -> {json.dumps(c['result'])}]")
                self.messages.append(pb.Message(role="tool", tool_call_id=c["id"],
                                                content=json.dumps(c["result"])))
            print(f"     {r['finish_reason']} | {timing_line(r['timing'])}")
            choice = free if rounds < MAX_TOOL_ROUNDS else pb.ToolChoice(mode="none")
        raise AssertionError("unreachable: the last round runs with tool_choice none")


def _json(message) -> str:
    from google.protobuf.json_format import MessageToJson

    return MessageToJson(message, preserving_proto_field_name=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="127.0.0.1:50051", help="HOST:PORT of --grpc-port")
    p.add_argument("--api-key", default=os.environ.get("TURNSPEC_API_KEY"))
    p.add_argument("--script", default=None, help="caller lines, one a line; - for stdin")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--auto-tools", action="store_true",
                   help="let the model call tools on any turn (tool_choice auto); without it, "
                        "only the script's [tool] lines call one, as a 135M model needs")
    p.add_argument("--json", default=None, help="write the turns here too")
    args = p.parse_args()
    turns = []
    with grpc.insecure_channel(args.target) as channel:
        agent = Agent(channel, args.api_key, args.max_tokens, args.auto_tools)
        for line in script_lines(args.script):
            print(f"you> {line.text}")
            turns.append({"user": line.text, "forced_tool": line.tool,
                          "barge_in": line.barge_in, "completions": agent.turn(line)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"turns": turns}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
