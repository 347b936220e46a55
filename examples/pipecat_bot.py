"""A pipecat bot on turnspec: text in, text out, two local tools, barge-in, latency per reply.

    make serve                                    # another terminal: 127.0.0.1:8000
    python examples/pipecat_bot.py                # OpenAIResponsesLLMService over WebSocket
    python examples/pipecat_bot.py --http         # OpenAILLMService over HTTP instead
    python examples/pipecat_bot.py --script -     # type the caller's lines

The pipeline is a voice bot's without the audio: user context aggregator -> LLM service ->
sentence timer -> printer -> assistant context aggregator. Tools are pipecat function
handlers that run locally; pipecat sends their results back and asks again. Under each reply
it prints pipecat's own metrics (the LLM service's TTFB, and the time to the first complete
sentence: TTFB + pipecat's text-aggregation metric, what a TTS service measures before it can
speak) beside the timing block turnspec sends with the completion (its `turnspec` field,
which the two subclasses below keep).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import asdict, dataclass, field

from loguru import logger
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMMessagesAppendFrame,
    LLMTextFrame,
    LLMUpdateSettingsFrame,
    MetricsFrame,
)
from pipecat.metrics.metrics import TextAggregationMetricsData, TTFBMetricsData
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.openai.responses.llm import OpenAIResponsesLLMService
from pipecat.utils.string import match_endofsentence
from pipecat.workers.runner import WorkerRunner

from agent_tools import BARGE_IN_AFTER, SYSTEM, TOOLS, Line, run_tool, script_lines, timing_line

MAX_TOOL_ROUNDS = 3  # then the model must answer in words
TIMEOUT = 300


class TurnspecResponses(OpenAIResponsesLLMService):
    """pipecat's Responses WebSocket service, keeping turnspec's block of each response."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.blocks: list[dict] = []

    async def _ws_recv(self) -> dict:
        event = await super()._ws_recv()
        if event.get("type") in ("response.completed", "response.incomplete"):
            self.blocks.append((event.get("response") or {}).get("turnspec") or {})
        return event


class TurnspecChat(OpenAILLMService):
    """pipecat's chat-completions service, keeping the block on each stream's last chunk."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.blocks: list[dict] = []

    async def get_chat_completions(self, context: LLMContext):
        stream = await super().get_chat_completions(context)
        blocks = self.blocks

        class Tap:
            def __aiter__(self):
                return self._chunks()

            async def _chunks(self):
                async for chunk in stream:
                    extra = (chunk.model_extra or {}).get("turnspec") or {}
                    if "timing" in extra:
                        blocks.append(extra)
                    yield chunk

            async def close(self) -> None:
                await stream.close()

        return Tap()


class SentenceTimer(FrameProcessor):
    """What a TTS service times before it speaks, without the audio: from a response's first
    text to its first complete sentence (pipecat's sentence matcher), reported through
    pipecat's own text-aggregation metric."""

    def __init__(self) -> None:
        super().__init__()
        self._text, self._timing = "", False

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame, direction) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMFullResponseStartFrame):
            self._text, self._timing = "", False
        elif isinstance(frame, LLMTextFrame) and self._text is not None:
            if not self._timing:
                await self.start_text_aggregation_metrics()
                self._timing = True
            self._text += frame.text
            if match_endofsentence(self._text):
                await self.stop_text_aggregation_metrics()
                self._text = None  # this response's first sentence is timed
        elif isinstance(frame, LLMFullResponseEndFrame) and self._timing and self._text:
            await self.stop_text_aggregation_metrics()  # no terminator: the end flushes it
        await self.push_frame(frame, direction)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[str] = field(default_factory=list)
    ttfb_ms: float | None = None
    first_sentence_ms: float | None = None  # TTFB + text aggregation
    interrupted: bool = False
    turnspec: dict | None = None


class Printer(FrameProcessor):
    """Joins each response's text, its tool calls and metrics into a Reply."""

    def __init__(self, llm) -> None:
        super().__init__()
        self.llm, self.replies = llm, asyncio.Queue()
        self.current: Reply | None = None
        self.pieces, self.barge_in_point, self.errors = 0, asyncio.Event(), []
        self.barged_in = False  # the caller talked over the current response

    async def process_frame(self, frame, direction) -> None:
        await super().process_frame(frame, direction)
        r = self.current
        if isinstance(frame, LLMFullResponseStartFrame):
            self.current, self.pieces, self.barged_in = Reply(), 0, False
            self.barge_in_point.clear()
            self.llm.blocks.clear()
        elif isinstance(frame, LLMTextFrame) and r is not None:
            r.text += frame.text
            print(frame.text, end="", flush=True)
            self.pieces += 1
            if self.pieces == BARGE_IN_AFTER:
                self.barge_in_point.set()
        elif isinstance(frame, FunctionCallsStartedFrame) and r is not None:
            r.tool_calls += [c.function_name for c in frame.function_calls]
        elif isinstance(frame, MetricsFrame) and r is not None:
            for d in frame.data:
                if isinstance(d, TTFBMetricsData) and d.processor == self.llm.name:
                    r.ttfb_ms = round(d.value * 1000, 1)
                elif isinstance(d, TextAggregationMetricsData) and r.ttfb_ms is not None:
                    r.first_sentence_ms = round(r.ttfb_ms + d.value * 1000, 1)
        elif isinstance(frame, (LLMFullResponseEndFrame, InterruptionFrame)) and r is not None:
            # pipecat may end an interrupted response with its end frame, before the
            # interruption itself reaches this processor
            r.interrupted = self.barged_in or isinstance(frame, InterruptionFrame)
            if r.interrupted and not match_endofsentence(r.text):
                r.first_sentence_ms = None  # pipecat stops its timers on an interruption
            r.turnspec = self.llm.blocks.pop() if self.llm.blocks else None
            self.current = None
            await self.replies.put(r)
        elif isinstance(frame, ErrorFrame):
            self.errors.append(frame.error)
        await self.push_frame(frame, direction)


class Bot:
    def __init__(self, llm, context: LLMContext, auto_tools: bool) -> None:
        self.llm, self.context, self.auto_tools = llm, context, auto_tools
        self.printer, self.rounds = Printer(llm), 0
        agg = LLMContextAggregatorPair(context)
        self.worker = PipelineWorker(
            Pipeline([agg.user(), llm, SentenceTimer(), self.printer, agg.assistant()]),
            params=PipelineParams(enable_metrics=True), cancel_on_idle_timeout=False)
        self._started = asyncio.Event()
        self.worker.event_handler("on_pipeline_started")(self._on_started)
        self.worker.event_handler("on_pipeline_error")(self._on_error)
        for name in TOOLS:
            llm.register_function(name, self._run_tool)

    async def _on_started(self, worker, frame) -> None:
        self._started.set()

    async def _on_error(self, worker, frame: ErrorFrame) -> None:
        self.printer.errors.append(frame.error)

    async def _run_tool(self, params) -> None:
        result = run_tool(params.function_name, dict(params.arguments))
        print(f"[{params.function_name}({json.dumps(dict(params.arguments))}) -> "
              f"{json.dumps(result)}]")
        self.rounds += 1
        free = "auto" if self.auto_tools else "none"
        await self.tool_choice(free if self.rounds < MAX_TOOL_ROUNDS else "none")
        await params.result_callback(result)

    async def tool_choice(self, choice: str | None, tool: str | None = None) -> None:
        """Set tool_choice for the next completions, the way each service takes it."""
        if isinstance(self.llm, TurnspecResponses):
            value = {"type": "function", "name": tool} if tool else choice
            await self.llm.queue_frame(LLMUpdateSettingsFrame(
                delta=OpenAIResponsesLLMService.Settings(extra={"tool_choice": value})))
        else:
            self.context.set_tool_choice({"type": "function", "function": {"name": tool}}
                                         if tool else choice)

    async def __aenter__(self) -> Bot:
        self.runner = WorkerRunner()
        await self.runner.add_workers(self.worker)
        self._run = asyncio.create_task(self.runner.run())
        await asyncio.wait_for(self._started.wait(), TIMEOUT)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.worker.queue_frame(EndFrame())
        await asyncio.wait_for(self._run, TIMEOUT)

    async def turn(self, line: Line) -> list[Reply]:
        """Say the caller's line; the replies until one answers in words (or is cut off)."""
        self.rounds = 0
        self.printer.barge_in_point.clear()  # set by the last reply, if it was long
        await self.tool_choice("auto" if self.auto_tools else "none", line.tool)
        await self.worker.queue_frame(LLMMessagesAppendFrame(
            [{"role": "user", "content": line.text}], run_llm=True))
        replies = []
        while True:
            print("bot> ", end="", flush=True)
            get = asyncio.ensure_future(self.printer.replies.get())
            if line.barge_in:
                cut = asyncio.ensure_future(self.printer.barge_in_point.wait())
                done, _ = await asyncio.wait({get, cut}, timeout=TIMEOUT,
                                             return_when=asyncio.FIRST_COMPLETED)
                if cut in done and get not in done:  # the caller talks over the bot
                    print(" [barge-in]", end="", flush=True)
                    self.printer.barged_in = True
                    await self.worker.queue_frame(InterruptionFrame())
                cut.cancel()
            r = await asyncio.wait_for(get, TIMEOUT)
            replies.append(r)
            print(f"{chr(10) if r.text else ''}     pipecat ms: ttfb {r.ttfb_ms}, first sentence "
                  f"{r.first_sentence_ms}"
                  f" | {timing_line((r.turnspec or {}).get('timing'))}")
            if r.interrupted or not r.tool_calls:
                return replies


def make_llm(args):
    if args.http:
        return TurnspecChat(base_url=args.http, api_key=args.api_key, settings=OpenAILLMService
                            .Settings(model="turnspec", system_instruction=SYSTEM,
                                      max_completion_tokens=args.max_tokens, temperature=0.0))
    return TurnspecResponses(ws_url=args.url, api_key=args.api_key,
                             settings=OpenAIResponsesLLMService.Settings(
                                 system_instruction=SYSTEM,
                                 max_completion_tokens=args.max_tokens, temperature=0.0))


async def run(args) -> dict:
    llm = make_llm(args)
    schemas = [FunctionSchema(name=n, description=d, properties=p["properties"],
                              required=p["required"]) for n, (d, p) in TOOLS.items()]
    context = LLMContext(tools=ToolsSchema(standard_tools=schemas))
    turns = []
    async with Bot(llm, context, args.auto_tools) as bot:
        lines = script_lines(args.script)
        while (line := await asyncio.to_thread(next, lines, None)) is not None:
            print(f"you> {line.text}")
            replies = await bot.turn(line)
            turns.append({"user": line.text, "forced_tool": line.tool,
                          "barge_in": line.barge_in, "replies": [asdict(r) for r in replies]})
        errors = [str(e) for e in bot.printer.errors]
    return {"service": type(llm).__name__, "turns": turns, "errors": errors,
            "context": bot.context.get_messages()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/responses")
    p.add_argument("--http", nargs="?", const="http://127.0.0.1:8000/v1", default=None,
                   metavar="BASE_URL", help="OpenAILLMService over HTTP instead of WebSocket")
    p.add_argument("--api-key", default=os.environ.get("TURNSPEC_API_KEY", "unused"))
    p.add_argument("--script", default=None, help="caller lines, one a line; - for stdin")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--auto-tools", action="store_true",
                   help="let the model call tools on any turn (tool_choice auto); without it, "
                        "only the script's [tool] lines call one, as a 135M model needs")
    p.add_argument("--json", default=None, help="write the turns here too")
    p.add_argument("--verbose", action="store_true", help="pipecat's own log")
    args = p.parse_args()
    if not args.verbose:
        logger.remove()
        logger.add(sys.stderr, level="WARNING")
    out = asyncio.run(run(args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=str)
    return 1 if out["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
