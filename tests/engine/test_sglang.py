"""The SGLang backend: its request translation, and the engine over a stand-in for
`sglang.Engine` whose scheduler is a real process (SGLang itself only runs on GPU machines)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.engine.sglang_standin import StandInSGLang
from turnspec.engine.chat import ChatTemplate
from turnspec.engine.drafter import DEFAULT_DRAFTER_DIR
from turnspec.engine.protocol import (
    EngineDeadError,
    EngineError,
    EngineStats,
    GenerateRequest,
    SamplingParams,
)
from turnspec.engine.sglang import SGLangConfig, SGLangEngine, sampling_params
from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_engine_kwargs_and_sampling(smollm2_dir: Path) -> None:
    drafter = str(DEFAULT_DRAFTER_DIR)
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir), speculator=drafter,
                                    spec_block_size=8, extra=(("cuda_graph_max_bs", 8),)))
    kw = eng.cfg.engine_kwargs()
    assert kw["speculative_algorithm"] == "DFLASH" and kw["speculative_num_draft_tokens"] == 8
    assert kw["speculative_draft_model_path"] == drafter and kw["cuda_graph_max_bs"] == 8
    assert kw["enable_metrics"] and kw["attention_backend"] == "triton"
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    tools = parse_tools([TOOL])
    grammar = chat.grammar_compiler.matcher(tools, parse_tool_choice("required", tools), chat.tool_format)
    req = GenerateRequest("r", [1, 2, 3], SamplingParams(temperature=0.5, top_k=0, max_tokens=7, stop=("x",)),
                          grammar=grammar)
    params = sampling_params(req)
    assert params["top_k"] == -1 and params["max_new_tokens"] == 7 and params["stop"] == ["x"]
    tag = json.loads(params["structural_tag"])  # the same structural tag our matcher compiled
    assert "get_weather" in json.dumps(tag)


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang installed")
async def test_start_without_sglang_is_a_clear_error(smollm2_dir: Path) -> None:
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir)))
    with pytest.raises(EngineError, match="needs the sglang package"):
        await eng.start()
    with pytest.raises(EngineError, match="not started"):
        eng.generate(GenerateRequest("r", [1]))


def test_bad_model_dir(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected a local HF model folder"):
        SGLangConfig(model_dir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="expected 'none' or a DFlash drafter folder"):
        SGLangConfig(model_dir=str(tmp_path), speculator=str(tmp_path / "nope"))


# -- the engine over a stand-in for sglang.Engine and a fake scheduler process (sglang_standin.py)

@pytest.fixture
async def standin(smollm2_dir: Path):
    built: list[StandInSGLang] = []

    def launch(**kwargs):
        built.append(StandInSGLang(step_s=0.02, **kwargs))
        return built[-1]
    eng = SGLangEngine(SGLangConfig(model_dir=str(smollm2_dir), stats_interval_s=0.02),
                       launch=launch)
    await eng.start()
    yield eng, built[0]
    await eng.shutdown()
    await built[0].tokenizer_manager.close()
    built[0].reap()


async def _stats_until(eng: SGLangEngine, ok) -> EngineStats:
    for _ in range(3000):  # a hang guard (30 s), not a timing assertion
        if ok(s := eng.stats()):
            return s
        await asyncio.sleep(0.01)
    raise AssertionError(f"stats never got there: {eng.stats()}")


async def _drain(stream) -> list:
    return [d async for d in stream]


async def test_streams_and_stats_come_from_the_scheduler(standin) -> None:
    eng, rt = standin
    assert rt.engine_kwargs == eng.cfg.engine_kwargs()
    deltas = await _drain(eng.generate(GenerateRequest("a", [1, 2, 3],
                                                       SamplingParams(max_tokens=4))))
    assert "".join(d.text for d in deltas) == " w1 w2 w3 w4"
    assert deltas[-1].finished and deltas[-1].finish_reason == "length"
    assert deltas[-1].timing.completion_tokens == 4
    long = eng.generate(GenerateRequest("b", [7] * 10, SamplingParams(max_tokens=10_000)))
    assert (await anext(long)).text == " w1"
    s = await _stats_until(eng, lambda s: s.active_sequences == 1)
    assert s.total_kv_blocks == 4096 and s.total_kv_blocks - s.free_kv_blocks >= 11
    await long.aclose()  # aborts in the scheduler
    s = await _stats_until(eng, lambda s: s.active_sequences == 0)
    assert (s.waiting_sequences, s.free_kv_blocks) == (0, s.total_kv_blocks)


@pytest.mark.parametrize("how", ["kill -9", "exit 0", "SIGQUIT"])
async def test_a_dead_scheduler_ends_every_stream(standin, how: str) -> None:
    """The fake scheduler is stopped first (SIGSTOP): the streams then wait on it as on a
    wedged SGLang, so only the watch can end them. kill -9; a scheduler that exits 0 (SGLang's
    after catching an exception); its SIGQUIT to us (how SGLang's children report a failure)."""
    eng, rt = standin
    if how == "SIGQUIT" and threading.current_thread() is not threading.main_thread():
        pytest.skip("a loop takes signals in the main thread only")
    reasons: list[str] = []
    eng.on_fatal(reasons.append)
    streams = [eng.generate(GenerateRequest(f"r{i}", [1, 2], SamplingParams(max_tokens=10**5)))
               for i in range(3)]
    for s in streams:
        await anext(s)  # in flight
    rt.scheduler.send_signal(signal.SIGSTOP)
    tasks = [asyncio.create_task(_drain(s)) for s in streams]
    await asyncio.sleep(0.1)  # chunks already sent are read; then the streams wait
    if how == "kill -9":
        rt.scheduler.kill()
    elif how == "exit 0":
        rt.scheduler.send_signal(signal.SIGCONT)
        rt.scheduler.stdin.close()
    else:
        os.kill(os.getpid(), signal.SIGQUIT)
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
    expected = {"kill -9": "fake_sglang_scheduler.py (pid", "exit 0": "exited with status 0",
                "SIGQUIT": "signalled its failure (SIGQUIT"}[how]
    for r in results:
        assert isinstance(r, EngineDeadError) and expected in str(r), r
    assert len(reasons) == 1 and expected in reasons[0]
    with pytest.raises(EngineDeadError, match="stopped serving"):
        eng.generate(GenerateRequest("late", [1]))
    if how == "SIGQUIT":
        rt.scheduler.kill()
    await eng.shutdown()
    if threading.current_thread() is threading.main_thread():
        # dead: a late SIGQUIT (SGLang's watchdog) is ignored while the process winds down
        assert signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
