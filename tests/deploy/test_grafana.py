"""deploy/grafana/turnspec.json against a real server's /metrics: every query of every panel
and variable parses as PromQL and names only series the server exposes after real turns (WS
text, an HTTP tool call, a gRPC turn, a refusal), with labels those series carry; a panel
naming a missing metric or label is reported. The GenAI semantic conventions' names and
attributes are what the server exposes where the conventions have a metric."""

from __future__ import annotations

import copy
import json
import re
import urllib.request
from pathlib import Path

import grpc
import promql_parser
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.srv_helpers import WEATHER_TOOL, start_server
from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "turnspec.json"
TARGET_LABELS = {"job", "instance"}  # Prometheus adds these to every series it scrapes
VARIABLES = {"$__rate_interval": "1m", "$job": ".*", "$model": ".*"}  # Grafana's, substituted
GEN_AI = {"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "transport"}


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target (rows' nested panels too) and query variable."""
    out = []

    def walk(panels: list[dict]) -> None:
        for p in panels:
            out.extend((f"panel {p['title']!r} target {t['refId']}", t["expr"])
                       for t in p.get("targets", []))
            walk(p.get("panels", []))

    walk(dashboard["panels"])
    for v in dashboard["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", v["definition"])
            assert m, f"variable {v['name']}: expected label_values(metric, label)"
            out.append((f"variable {v['name']}", f"count by ({m[2]}) ({m[1]})"))
    return out


def _selectors(node, by: set[str], found: list[tuple[str, set[str], set[str]]]) -> None:
    """(metric, matcher labels, labels an enclosing `by` groups on) for each selector."""
    if isinstance(node, promql_parser.VectorSelector):
        labels = {m.name for m in node.matchers.matchers}
        found.append((node.name, labels, by))
    elif isinstance(node, promql_parser.MatrixSelector):
        _selectors(node.vector_selector, by, found)
    elif isinstance(node, promql_parser.AggregateExpr):
        grouping = set(node.modifier.labels) if node.modifier is not None else set()
        _selectors(node.expr, grouping or by, found)
    elif isinstance(node, promql_parser.Call):
        for a in node.args:
            _selectors(a, by, found)
    elif isinstance(node, promql_parser.BinaryExpr):
        _selectors(node.lhs, by, found)
        _selectors(node.rhs, by, found)
    elif isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr,
                           promql_parser.SubqueryExpr)):
        _selectors(node.expr, by, found)


def problems(dashboard: dict, exposed: dict[str, set[str]]) -> list[str]:
    """What in the dashboard the server's series do not hold: unparsable queries, metrics it
    does not expose, labels those metrics lack."""
    out = []
    for where, expr in queries(dashboard):
        for var, value in VARIABLES.items():
            expr = expr.replace(var, value)
        try:
            tree = promql_parser.parse(expr)
        except ValueError as e:
            out.append(f"{where}: not PromQL ({e}): {expr}")
            continue
        found: list[tuple[str, set[str], set[str]]] = []
        _selectors(tree, set(), found)
        for name, matched, grouped in found:
            if name not in exposed:
                out.append(f"{where}: metric {name} is not exposed by /metrics")
                continue
            missing = (matched | grouped) - exposed[name] - TARGET_LABELS
            if missing:
                out.append(f"{where}: {name} has no label {sorted(missing)} "
                           f"(it has {sorted(exposed[name])})")
    return out


def scrape_series(port: int) -> dict[str, set[str]]:
    """/metrics -> {series name: label names}, for every series with a sample."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def _post(port: int, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def exposed(local_engine) -> dict[str, set[str]]:
    """The series of a server after one turn per transport and one refusal."""
    import asyncio

    srv = start_server(local_engine, default_max_tokens=24, max_output_tokens=48)
    try:
        async def ws_turn() -> None:
            ws = await ResponsesSocketClient(f"ws://127.0.0.1:{srv.port}/v1/responses").connect()
            try:
                rec = await ws.create("What is the capital of France? Answer in one sentence.",
                                      max_output_tokens=24)
            finally:
                await ws.close()
            assert rec.ok and rec.timing["ttfs_ms"] is not None, rec.timing  # a sentence

        asyncio.run(ws_turn())
        status, body = _post(srv.port, {
            "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
            "tools": [WEATHER_TOOL], "tool_choice": "required", "max_tokens": 40})
        assert status == 200 and body["choices"][0]["finish_reason"] == "tool_calls", body
        status, body = _post(srv.port, {"messages": [{"role": "user", "content": "hi"}],
                                        "max_tokens": 64})
        assert status == 400 and body["error"]["code"] == "max_tokens_too_large", body
        with grpc.insecure_channel(f"127.0.0.1:{srv.grpc_port}") as ch:
            last = list(pb_grpc.GenerationStub(ch).Generate(pb.GenerateRequest(
                messages=[pb.Message(role="user", content="Say hello.")],
                sampling=pb.SamplingParams(max_tokens=4)), timeout=120))[-1]
        assert last.WhichOneof("kind") == "complete"
        return scrape_series(srv.port)
    finally:
        srv.stop()


def test_every_dashboard_query_names_what_the_server_exposes(exposed):
    dashboard = json.loads(DASHBOARD.read_text())
    assert len(queries(dashboard)) >= 30
    assert problems(dashboard, exposed) == []


def test_a_panel_naming_a_missing_metric_or_label_fails(exposed):
    dashboard = json.loads(DASHBOARD.read_text())
    bad = copy.deepcopy(dashboard)
    bad["panels"][1]["targets"].append(  # a renamed metric, as after a server-side rename
        {"refId": "Z", "expr": "histogram_quantile(0.9, sum by (le) "
                                "(rate(turnspec_time_to_first_token_seconds_bucket[5m])))"})
    bad["panels"].append({"title": "planted", "targets": [
        {"refId": "A", "expr": "sum by (le, model) (rate(gen_ai_server_time_to_first_token_"
                               "seconds_bucket[$__rate_interval]))"},
        {"refId": "B", "expr": "rate(turnspec_requests_total{status=\"ok\"}[5m])"},
        {"refId": "C", "expr": "sum(rate(turnspec_requests_total[5m]"}]})
    found = problems(bad, exposed)
    assert len(found) == 4, found
    assert "metric turnspec_time_to_first_token_seconds_bucket is not exposed" in found[0]
    assert "gen_ai_server_time_to_first_token_seconds_bucket has no label ['model']" in found[1]
    assert "turnspec_requests_total has no label ['status']" in found[2]
    assert "not PromQL" in found[3]


def test_gen_ai_conventions_where_they_have_a_metric(exposed):
    """gen_ai.server.{time_to_first_token, time_per_output_token, request.duration} in
    Prometheus naming (dots -> underscores, unit suffix) with the conventions' attributes;
    turnspec's own names only for time to first sentence, tool-call latency and tau."""
    for metric in ("gen_ai_server_time_to_first_token_seconds",
                   "gen_ai_server_time_per_output_token_seconds",
                   "gen_ai_server_request_duration_seconds"):
        assert exposed[f"{metric}_bucket"] == GEN_AI | {"le"}, metric
        assert exposed[f"{metric}_count"] == GEN_AI
    for metric in ("turnspec_time_to_first_sentence_seconds",
                   "turnspec_tool_call_latency_seconds"):
        assert exposed[f"{metric}_bucket"] == {"transport", "le"}
    assert "turnspec_spec_accepted_length_sum" in exposed
    assert not any(n.startswith("gen_ai_") for n in exposed
                   if not n.startswith(("gen_ai_server_time_to_first_token_seconds",
                                        "gen_ai_server_time_per_output_token_seconds",
                                        "gen_ai_server_request_duration_seconds")))
