"""GenerateClient (SGLang's native /generate) against a recording peer in SGLang's streaming
format: cumulative and incremental chunks give the same record; a tool call in the raw text
comes out as turnspec's transports report it (argument chunks, tool_call_ms, the call);
SGLang's error line, a barge-in, and sampling parameters equal to turnspec's SGLang engine's;
the last chunk's metrics as the timing block turnspec's server sends (split by the load test)."""

from __future__ import annotations

import asyncio

import pytest

from tests.loadtest.sglang_recorder import GenerateRecorder
from turnspec.engine.protocol import Delta, GenerateRequest, SamplingParams, Timing
from turnspec.engine.sglang import sampling_params as engine_params
from turnspec.engine.sglang_meta import final_delta
from turnspec.loadtest.generate_client import GenerateClient, sampling_params, sglang_block
from turnspec.loadtest.stats import server_parts
from turnspec.tools_grammar.formats import get_format
from turnspec.tools_grammar.parser import ToolCallStreamParser
from turnspec.tools_grammar.schema import parse_tools

TOOLS = parse_tools([{"type": "function", "name": "move_booking", "parameters": {
    "type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}}])
CALL = get_format("hermes").render_call("move_booking", {"ref": "A17"})


@pytest.fixture(scope="module")
def recorder():
    rec = GenerateRecorder().start()
    yield rec
    rec.stop()


def _run(recorder, *, parser=None, cancel_after=None):
    async def go():
        client = GenerateClient(f"http://127.0.0.1:{recorder.port}/generate")
        try:
            return await client.generate([1, 2, 3], sampling_params(
                max_tokens=8, temperature=0.0, structural_tag=None), parser=parser,
                cancel_after_chunks=cancel_after)
        finally:
            await client.close()

    return asyncio.run(go())


@pytest.mark.parametrize("incremental", [False, True])
def test_a_tool_call_streams_as_turnspec_reports_it(recorder, incremental):
    cut = [0, 6, 30, 55, len(CALL)]  # four chunks: the tag cut, arguments over two
    recorder.pieces = [(10 + i, CALL[a:b])
                       for i, (a, b) in enumerate(zip(cut, cut[1:], strict=False))]
    recorder.incremental, recorder.finish, recorder.error = incremental, "stop", None
    rec = _run(recorder, parser=ToolCallStreamParser("hermes", TOOLS))
    assert rec.ok and rec.finish_reason == "stop" and rec.text == ""
    assert [(c["name"], c["arguments"]) for c in rec.tool_calls] == [
        ("move_booking", '{"ref":"A17"}')]
    assert rec.tool_call_ms is not None and 1 <= len(rec.chunk_ms) <= 4  # argument chunks
    assert rec.usage == {"prompt_tokens": 3, "completion_tokens": 4, "cached_tokens": 0}
    assert recorder.bodies[-1]["input_ids"] == [1, 2, 3] and recorder.bodies[-1]["stream"]


@pytest.mark.parametrize("incremental", [False, True])
def test_plain_text_chunks_without_a_parser(recorder, incremental):
    recorder.pieces = [(4, " Sure"), (7, ","), (9, " one moment.")]
    recorder.incremental, recorder.finish, recorder.error = incremental, "length", None
    rec = _run(recorder)
    assert rec.ok and rec.text == " Sure, one moment." and len(rec.chunk_ms) == 3
    assert rec.finish_reason == "length" and rec.output_tokens == 3 and rec.ttft_ms is not None


def test_error_line_and_barge_in(recorder):
    recorder.error = "grammar compile failed"
    rec = _run(recorder)
    assert not rec.ok and rec.error == {"message": "grammar compile failed"}
    recorder.error, recorder.incremental = None, True
    rec = _run(recorder, cancel_after=1)
    assert rec.ok and rec.finish_reason == "cancelled" and rec.cancel_ms is not None


def test_sampling_params_are_turnspec_sglang_engines():
    for temperature, tag in ((0.0, None), (0.7, '{"type": "structural_tag"}')):
        request = GenerateRequest("r", [1], SamplingParams(temperature=temperature,
                                                           max_tokens=96))
        if tag is not None:
            request.grammar = type("Tag", (), {"structural_tag": tag})()
        assert sampling_params(max_tokens=96, temperature=temperature,
                               structural_tag=tag) == engine_params(request)

META = {"queue_time": 0.0005, "forward_entry_time": 1000.0021, "prefill_finished_time": 1000.0251,
        "request_received_ts": 1000.0, "request_finished_ts": 1000.0651, "spec_verify_ct": 1}


def recorder_meta(rec) -> dict:
    """The meta_info the recorder sent on `rec`'s last chunk."""
    return {**META, "completion_tokens": rec.output_tokens}


def test_sglang_metrics_become_the_timing_block(recorder):
    """With --enable-metrics SGLang's last chunk carries its timestamps (seconds) and, with
    speculation, its verify count: the record gets queue, prefill, decode and server E2E as
    turnspec's server reports them, and τ. Without them, no block: no part is made up."""
    recorder.pieces, recorder.incremental, recorder.error = [(4, " Sure"), (7, ".")], True, None
    recorder.final_meta = dict(META)
    try:
        rec = _run(recorder)
    finally:
        recorder.final_meta = {}
    t = rec.timing
    assert t["queue_ms"] == pytest.approx(0.5) and t["prefill_ms"] == pytest.approx(23.0)
    assert t["decode_ms"] == pytest.approx(40.0) and t["server_e2e_ms"] == pytest.approx(65.1)
    assert t["server_received_unix_ms"] == pytest.approx(1_000_000.0)
    assert server_parts(rec)["host_overhead_ms"] == pytest.approx(65.1 - 0.5 - 23.0 - 40.0)
    assert rec.tau == 2.0 and rec.spec_counts == (2, 1)
    assert rec.step_ms == pytest.approx(40.0)  # decode over the one verify step
    # the way in (receipt to the scheduler queue: all of this server's host overhead) and,
    # without SGLang's first-yield stamp, no way back
    assert t["engine_in_ms"] == pytest.approx(1.6) and t["first_back_ms"] is None
    back = sglang_block({**META, "response_sent_to_client_ts": 1000.0263}, 2)["timing"]
    assert back["first_back_ms"] == pytest.approx(1.2)
    ours = Timing()  # turnspec's SGLang engine reads the same meta_info the same way
    final_delta(Delta("r", [7], "."), {**recorder_meta(rec), "finish_reason": {"type": "stop"}},
                ours, 0.0, None, 0.0)
    assert (ours.queue_ms, ours.prefill_ms, ours.decode_ms) == pytest.approx(
        (t["queue_ms"], t["prefill_ms"], t["decode_ms"]), abs=1e-3)
    plain = _run(recorder)
    assert plain.turnspec == {} and plain.tau is None and server_parts(plain) is None
