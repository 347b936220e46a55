"""Issue 33's acceptance turn through real pipecat, with the server's and pipecat's defaults:
`OpenAIResponsesLLMService` over WebSocket sends no temperature, no max_output_tokens and no
tool_choice; two tools; the second turn of a dental-receptionist conversation is "uh hi, do you
have anything for a cleaning on thursday". Out of the box this looped for 512 tokens and ended
incomplete (max_output_tokens), which pipecat surfaces as an ErrorFrame. With the voice-safe
defaults (docs/voice-defaults.md) the turn completes with no error frame.

The control test shows that the check can fail: the same pipeline with a budget too small for
the reply gets pipecat's ErrorFrame for an incomplete response.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from loguru import logger
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.services.openai.responses.llm import OpenAIResponsesLLMService

from turnspec.benchmarks.voice_turns import DENTAL_GREETING_USER, DENTAL_TOOLS, DENTAL_TURN
from turnspec.server.config import ServerConfig

from .srv_helpers import scrape, start_server
from .test_pipecat import Bot

SYSTEM = "You are a chatbot for a dental clinic."
SETTLE = 1.0  # s: an ErrorFrame reaches the pipeline source a few task hops after the text


@pytest.fixture(scope="module")
def server(local_engine):
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    # Every voice default as shipped (start_server otherwise caps turns at 16 tokens).
    srv = start_server(local_engine, default_max_tokens=ServerConfig().default_max_tokens)
    yield srv
    srv.stop()


def _dental_bot(port: int, calls: list[tuple[str, dict]], **settings) -> Bot:
    llm = OpenAIResponsesLLMService(
        ws_url=f"ws://127.0.0.1:{port}/v1/responses", api_key="unused",
        settings=OpenAIResponsesLLMService.Settings(system_instruction=SYSTEM, **settings))

    async def handler(params) -> None:
        calls.append((params.function_name, dict(params.arguments)))
        await params.result_callback({"slots": ["9:00", "14:30"]})

    schemas = []
    for tool in DENTAL_TOOLS:
        fn = tool["function"]
        schemas.append(FunctionSchema(name=fn["name"], description=fn["description"],
                                      properties=fn["parameters"]["properties"],
                                      required=fn["parameters"]["required"]))
        llm.register_function(fn["name"], handler)
    return Bot(llm, LLMContext(tools=ToolsSchema(standard_tools=schemas)))


def _ws_outcomes(port: int) -> dict[str, float]:
    """The server's finished WebSocket turns by outcome (finish reason)."""
    prefix = "turnspec_requests_total{"
    return {k.split('outcome="')[1].split('"')[0]: v for k, v in scrape(port).items()
            if k.startswith(prefix) and 'transport="ws"' in k}


async def _outcomes_after(port: int, before: dict[str, float], turns: int) -> dict[str, float]:
    """New outcomes once the server has counted `turns` more finished turns."""
    for _ in range(200):
        now = _ws_outcomes(port)
        new = {k: v - before.get(k, 0) for k, v in now.items() if v > before.get(k, 0)}
        if sum(new.values()) >= turns:
            return new
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the server did not count {turns} finished turns")


async def test_dental_second_turn_completes_with_default_settings(server):
    calls: list[tuple[str, dict]] = []
    before = _ws_outcomes(server.port)
    async with _dental_bot(server.port, calls) as bot:
        await bot.say(DENTAL_GREETING_USER)
        assert (await bot.reply()).strip()
        await bot.say(DENTAL_TURN)
        reply = await bot.reply()
        if reply == "" and calls:  # it called a tool; pipecat asks again with the result
            reply = await bot.reply()
        await asyncio.sleep(SETTLE)
        assert not bot.collector.errors, bot.collector.errors
        assert reply.strip()
    new = await _outcomes_after(server.port, before, 2 + bool(calls))
    assert set(new) <= {"stop", "tool_calls"}, new  # nothing cut at the budget, no error


async def test_control_a_cut_reply_is_an_error_frame(server):
    """A budget the reply runs past ends the response incomplete: pipecat's ErrorFrame, which
    the acceptance test checks for, does reach the test, and the server counts a "length"."""
    before = _ws_outcomes(server.port)
    async with _dental_bot(server.port, [], max_completion_tokens=4) as bot:
        await bot.say(DENTAL_TURN)
        await bot.reply()  # the text so far; the ErrorFrame travels upstream apart from it
        await asyncio.sleep(SETTLE)
        assert len(bot.collector.errors) == 1
        assert "max_output_tokens" in str(bot.collector.errors[0].error)
    assert await _outcomes_after(server.port, before, 1) == {"length": 1}
