"""`turnspec loadtest` end to end against `turnspec serve --engine fake-fixed-rate` (a real
process): known answers on every transport, the JSON contract, barge-in, client saturation,
and bad input (unreachable URL, a server that errors or goes away, malformed workload files),
each of which is counted and reported while the run still writes its report."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from turnspec.cli.main import main
from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

from .conftest import FAKE_FIRST_TOKEN_MS, FAKE_INTERVAL_MS, FAKE_TOKENS
from .test_workload import MESSAGES, TOOLS

TRANSPORTS = ("http", "ws", "grpc")
CONTRACT = ("ttft_ms", "itl_ms", "e2e_ms", "rtt_ms", "server_queue_ms", "server_prefill_ms",
            "server_decode_ms", "tau")


def loadtest(tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "result.json"
    code = main(["loadtest", *args, "--out", str(out), "--history",
                 str(tmp_path / "history.jsonl"), "--no-progress"])
    return code, json.loads(out.read_text())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_known_answers(fake_serve, tmp_path, transport):
    """Open loop at 20 turns/s: TTFT p50 within 5% of D1, ITL p50 within 5% of D2."""
    code, res = loadtest(tmp_path, "--url", fake_serve.url(transport), "--rate", "20",
                         "--duration", "2", "--workload", f"synthetic:32,{FAKE_TOKENS + 4}",
                         "--warmup", "2", "--details", str(tmp_path / "turns.csv"))
    assert code == 0, res["requests"]
    m = res["metrics"]
    assert m["ttft_ms"]["p50"] == pytest.approx(FAKE_FIRST_TOKEN_MS, rel=0.05)
    assert m["itl_ms"]["p50"] == pytest.approx(FAKE_INTERVAL_MS, rel=0.05)
    assert m["output_tokens"]["p50"] == FAKE_TOKENS
    for key in CONTRACT:
        assert set(m[key]) >= {"p50", "p90", "p99", "mean", "max"}, key
    assert all(m[k]["n"] > 10 for k in CONTRACT if k != "tau")  # tau: no speculation here
    assert res["requests"]["ok"] > 10 and res["requests"]["errors"] == 0
    assert res["requests"]["warmup"] == {"ok": 2, "total": 2}
    assert res["load"]["mode"] == "open" and res["target"]["transport"] == transport
    lines = (tmp_path / "turns.csv").read_text().splitlines()
    assert len(lines) == res["requests"]["ok"] + 1 and lines[0].startswith("conversation_id")
    history = (tmp_path / "history.jsonl").read_text().splitlines()
    assert len(history) == 1 and "samples" not in json.loads(history[0])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_barge_in_cancels_after_k_chunks(fake_serve, tmp_path, transport):
    code, res = loadtest(tmp_path, "--url", fake_serve.url(transport), "--concurrency", "2",
                         "--requests", "6", "--workload", "synthetic:16,16", "--barge-in", "1",
                         "--barge-in-after", "3")
    assert code == 0 and res["requests"]["barged_in"] == 6
    assert res["metrics"]["e2e_ms"]["n"] == 0  # cut on purpose: no E2E
    if transport == "http":  # a hung-up HTTP stream shows the client no server stop
        assert "cancel_to_stop_ms" not in res["metrics"]
    else:
        assert res["metrics"]["cancel_to_stop_ms"]["n"] == 6
        assert res["metrics"]["cancel_to_stop_ms"]["p50"] < FAKE_INTERVAL_MS


def test_a_starved_client_is_reported(fake_serve, tmp_path, capsys):
    code, res = loadtest(tmp_path, "--url", fake_serve.url("http"), "--rate", "10",
                         "--duration", "1.5", "--workload", "synthetic:16,8",
                         "--burn-loop-ms", "50")
    sat = res["saturation"]
    assert sat["client_bound"] and sat["reasons"] and code == 0
    assert "CLIENT-BOUND" in capsys.readouterr().out


def test_unreachable_url_is_counted_and_reported(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    for url in (f"http://127.0.0.1:{port}/v1", f"ws://127.0.0.1:{port}/v1/responses",
                f"grpc://127.0.0.1:{port}"):
        code, res = loadtest(tmp_path, "--url", url, "--requests", "3", "--timeout", "5")
        assert code == 1
        assert res["requests"]["errors_by_type"] == {"connection_error": 1}
        assert res["requests"]["ok"] == 0 and res["notes"]
    assert "exceeds --max-error-rate" in capsys.readouterr().err


def test_server_errors_and_max_error_rate(fake_serve, tmp_path):
    """Prompts over the server's context: every turn is refused (400), counted by type."""
    args = ("--url", fake_serve.url("http"), "--requests", "4", "--workload", "synthetic:600,8")
    code, res = loadtest(tmp_path, *args)
    assert code == 1 and res["requests"]["errors_by_type"] == {"context_length_exceeded": 4}
    assert "512 tokens" in res["requests"]["error_examples"]["context_length_exceeded"]
    code, _ = loadtest(tmp_path, *args, "--max-error-rate", "1.0")
    assert code == 0


def test_a_server_that_goes_away_mid_run(smollm2_dir, tmp_path):
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.fake import FakeFixedRateEngine

    engine = FakeFixedRateEngine(ChatTemplate.from_model_dir(str(smollm2_dir)),
                                 first_token_ms=20.0, interval_ms=10.0, tokens_per_request=8)
    srv = ThreadedServer(engine, ServerConfig(port=0, grpc_port=0)).start()
    threading.Timer(1.0, srv.stop, kwargs={"drain_seconds": 0.0}).start()
    code, res = loadtest(tmp_path, "--url", f"ws://127.0.0.1:{srv.port}/v1/responses",
                         "--concurrency", "2", "--duration", "3", "--workload",
                         "synthetic:16,8")
    assert code == 1
    assert res["requests"]["ok"] > 0 and res["requests"]["errors"] > 0
    kinds = set(res["requests"]["errors_by_type"])
    assert "connection_error" in kinds  # reconnecting after the stop
    assert kinds <= {"connection_error", "incomplete_stream", "server_shutting_down"}


def test_malformed_workload_files(fake_serve, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    code, res = loadtest(tmp_path, "--url", fake_serve.url("grpc"), "--requests", "2",
                         "--workload", str(bad))
    assert code == 1 and res["requests"]["errors_by_type"] == {"workload_error": 1}
    assert res["requests"]["workload_errors"][0].startswith(f"{bad}:1: not JSON")
    assert "nothing was sent" in res["notes"][0]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"id": "c", "messages": MESSAGES, "tools": TOOLS}) + "\n"
                     + json.dumps({"messages": []}) + "\n")
    code, res = loadtest(tmp_path, "--url", fake_serve.url("ws"), "--requests", "3",
                         "--workload", str(mixed))
    assert code == 1 and res["requests"]["ok"] == 3
    assert res["requests"]["errors_by_type"] == {"workload_error": 1}
    assert res["requests"]["workload_errors"] == [
        f"{mixed}:2: messages: expected a non-empty array of chat messages"]


def test_a_sweep_writes_every_level_and_its_plots(fake_serve, tmp_path):
    """--sweep 1,2 with --plot: one JSON holding both levels, and every plot a real PNG."""
    plots = tmp_path / "plots"
    code, res = loadtest(tmp_path, "--url", fake_serve.url("http"), "--sweep", "1,2",
                         "--requests", "4", "--workload", "synthetic:16,8", "--plot", str(plots))
    assert code == 0
    assert [r["load"]["concurrency"] for r in res["runs"]] == [1, 2]
    assert [p["concurrency"] for p in res["sweep"]] == [1, 2]
    names = {"ttft_cdf.png", "itl_cdf.png", "breakdown.png", "tau_hist.png", "sweep.png"}
    assert {p.name for p in plots.iterdir()} == names
    for name in names:
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


@pytest.mark.parametrize(("sweep", "more"), [(",", ()), ("1,x", ()), ("1,2", ("--rate", "5"))])
def test_a_bad_sweep_is_refused_before_anything_runs(tmp_path, capsys, sweep, more):
    """Nothing is loaded or sent: the error names --sweep (a tokenizer folder that does not
    exist is never reached)."""
    code = main(["loadtest", "--url", "http://127.0.0.1:9/v1", "--sweep", sweep, *more,
                 "--workload", "synthetic:8,8", "--tokenizer", str(tmp_path / "none"),
                 "--history", "", "--no-progress"])
    assert code == 2
    assert "--sweep" in capsys.readouterr().err
