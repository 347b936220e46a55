"""Real pipecat 1.14 text pipelines against a real server (real SmolLM2, real sockets):
`OpenAIResponsesLLMService(ws_url=...)` over WebSocket and `OpenAILLMService(base_url=...)`
over HTTP — streamed text, a function call pipecat executes, the answer after its result,
and an interruption that stops generation and frees the engine's sequence.

SmolLM2-135M does not call tools on its own in auto mode, so the tool turn forces a call
(tool_choice "required") and the handler switches to "none" before returning its result,
through the public settings/context APIs a pipecat app would use.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from loguru import logger
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMMessagesAppendFrame,
    LLMTextFrame,
    LLMUpdateSettingsFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.openai.responses.llm import OpenAIResponsesLLMService
from pipecat.workers.runner import WorkerRunner

from .srv_helpers import scrape, start_server, wait_engine_idle

TIMEOUT = 120
WEATHER = FunctionSchema(name="get_weather", description="Get the current weather for a city",
                         properties={"city": {"type": "string"}}, required=["city"])


@pytest.fixture(scope="module")
def server(local_engine):
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    srv = start_server(local_engine)
    yield srv
    srv.stop()


class Collector(FrameProcessor):
    """Joins each response's LLMTextFrames; signals the first text frame (for barge-in)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.responses: asyncio.Queue[str] = asyncio.Queue()
        self.first_text = asyncio.Event()
        self.errors: list[ErrorFrame] = []

    async def process_frame(self, frame, direction) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMTextFrame):
            self.parts.append(frame.text)
            self.first_text.set()
        elif isinstance(frame, LLMFullResponseEndFrame):
            await self.responses.put("".join(self.parts))
            self.parts = []
        elif isinstance(frame, ErrorFrame):
            self.errors.append(frame)
        await self.push_frame(frame, direction)


class Bot:
    def __init__(self, llm, context: LLMContext) -> None:
        self.llm, self.context = llm, context
        agg = LLMContextAggregatorPair(context)
        self.collector = Collector()
        self.worker = PipelineWorker(Pipeline([agg.user(), llm, self.collector, agg.assistant()]),
                                     cancel_on_idle_timeout=False)
        self._started = asyncio.Event()
        self.worker.event_handler("on_pipeline_started")(self._on_started)
        # pipecat pushes an ErrorFrame upstream, to the pipeline's source: a processor after
        # the LLM never sees it, the worker does.
        self.worker.event_handler("on_pipeline_error")(self._on_error)

    async def _on_started(self, worker, frame) -> None:
        self._started.set()

    async def _on_error(self, worker, frame: ErrorFrame) -> None:
        self.collector.errors.append(frame)

    async def __aenter__(self) -> Bot:
        self.runner = WorkerRunner()
        await self.runner.add_workers(self.worker)
        self._run = asyncio.create_task(self.runner.run())
        await asyncio.wait_for(self._started.wait(), TIMEOUT)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.worker.queue_frame(EndFrame())
        await asyncio.wait_for(self._run, TIMEOUT)

    async def say(self, text: str) -> None:
        await self.worker.queue_frame(LLMMessagesAppendFrame(
            [{"role": "user", "content": text}], run_llm=True))

    async def reply(self) -> str:
        return await asyncio.wait_for(self.collector.responses.get(), TIMEOUT)


async def _conversation(bot: Bot, calls: list, force_tool, port: int, transport: str) -> None:
    await bot.say("Say hello to me.")
    assert (await bot.reply()).strip()  # streamed text

    await force_tool()
    await bot.say("What's the weather in Paris?")
    assert (await bot.reply()) == ""  # the tool-call response carries no text
    assert len(calls) == 1 and isinstance(calls[0]["city"], str)
    follow_up = await bot.reply()  # pipecat ran the function and asked again
    assert follow_up.strip()
    kinds = [m.get("role") for m in bot.context.get_messages()]
    assert kinds[-3:] == ["assistant", "tool", "assistant"]

    cancelled = scrape(port).get(
        f'turnspec_requests_total{{outcome="cancelled",transport="{transport}"}}', 0)
    bot.collector.first_text.clear()
    await bot.say("Tell me a very long story about a dragon and a knight.")
    await asyncio.wait_for(bot.collector.first_text.wait(), TIMEOUT)
    await bot.worker.queue_frame(InterruptionFrame())  # barge-in
    key = f'turnspec_requests_total{{outcome="cancelled",transport="{transport}"}}'
    for _ in range(600):  # the cancel reaches the server, which aborts the engine request
        if scrape(port).get(key, 0) == cancelled + 1:
            break
        await asyncio.sleep(0.05)
    m = wait_engine_idle(port)
    assert m[key] == cancelled + 1
    assert m["turnspec_engine_active_sequences"] == 0
    while not bot.collector.responses.empty():
        bot.collector.responses.get_nowait()
    await bot.say("Thanks, bye.")  # the service recovers after the barge-in
    assert (await bot.reply()).strip()
    assert not bot.collector.errors, bot.collector.errors


async def test_pipecat_responses_websocket(server):
    llm = OpenAIResponsesLLMService(
        ws_url=f"ws://127.0.0.1:{server.port}/v1/responses", api_key="unused",
        settings=OpenAIResponsesLLMService.Settings(
            system_instruction="You are a helpful voice assistant.",
            max_completion_tokens=64, temperature=0.0))
    calls: list[dict] = []

    async def get_weather(params) -> None:
        calls.append(dict(params.arguments))
        await params.llm.queue_frame(LLMUpdateSettingsFrame(
            delta=OpenAIResponsesLLMService.Settings(extra={"tool_choice": "none"})))
        await params.result_callback({"city": params.arguments["city"], "temperature_c": 18,
                                      "conditions": "sunny"})

    llm.register_function("get_weather", get_weather)
    context = LLMContext(tools=ToolsSchema(standard_tools=[WEATHER]))

    async with Bot(llm, context) as bot:
        async def force_tool() -> None:
            await bot.worker.queue_frame(LLMUpdateSettingsFrame(
                delta=OpenAIResponsesLLMService.Settings(extra={"tool_choice": "required"})))

        before = scrape(server.port)["turnspec_continued_turns_total"]
        await _conversation(bot, calls, force_tool, server.port, "ws")
    # pipecat sent only new items with previous_response_id (weather question, function
    # result, story, bye), and the server continued its stored conversation each time.
    assert scrape(server.port)["turnspec_continued_turns_total"] - before >= 3


async def test_pipecat_openai_http(server):
    llm = OpenAILLMService(
        base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused",
        settings=OpenAILLMService.Settings(
            model="smollm2", system_instruction="You are a helpful voice assistant.",
            max_completion_tokens=64, temperature=0.0))
    calls: list[dict] = []
    context = LLMContext(tools=ToolsSchema(standard_tools=[WEATHER]))

    async def get_weather(params) -> None:
        calls.append(dict(params.arguments))
        params.context.set_tool_choice("none")
        await params.result_callback({"city": params.arguments["city"], "temperature_c": 18,
                                      "conditions": "sunny"})

    llm.register_function("get_weather", get_weather)

    async def force_tool() -> None:
        context.set_tool_choice("required")

    async with Bot(llm, context) as bot:
        await _conversation(bot, calls, force_tool, server.port, "http")
