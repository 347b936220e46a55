"""deploy/'s YAML holds together: the collector's pipeline uses only components it defines
and receives OTLP where `turnspec serve --otlp-endpoint` sends it; Prometheus scrapes the
server's /metrics; compose mounts files that exist where the configs expect them."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def test_collector_receives_otlp_and_exports_traces_to_a_store():
    cfg = _load("otel-collector.yaml")
    protocols = cfg["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")  # serve's default protocol
    assert protocols["http"]["endpoint"].endswith(":4318")  # --otlp-protocol http/protobuf
    traces = cfg["service"]["pipelines"]["traces"]
    for kind in ("receivers", "processors", "exporters"):
        assert traces[kind] and set(traces[kind]) <= set(cfg[kind]), kind
    assert traces["processors"][0] == "memory_limiter"  # the collector's advice: first
    (exporter,) = traces["exporters"]
    assert exporter.split("/")[0] == "otlp" and cfg["exporters"][exporter]["endpoint"]


def test_prometheus_scrapes_metrics():
    (job,) = _load("prometheus.yml")["scrape_configs"]
    assert job["metrics_path"] == "/metrics" and job["static_configs"][0]["targets"]


def test_compose_mounts_existing_files_where_the_configs_expect_them():
    services = _load("compose.yaml")["services"]
    for svc in services.values():
        for volume in svc.get("volumes", []):
            src = volume.split(":")[0]
            assert (DEPLOY / src).exists(), volume
    provider = _load("grafana/provisioning/dashboards/turnspec.yaml")["providers"][0]
    assert f"./grafana/turnspec.json:{provider['options']['path']}/turnspec.json:ro" \
        in services["grafana"]["volumes"]
    assert "--config=/etc/otelcol/config.yaml" in services["otel-collector"]["command"]
    ds = {d["uid"]: d for d in _load("grafana/provisioning/datasources/prometheus.yaml")
          ["datasources"]}
    assert ds["prometheus"]["url"] == "http://prometheus:9090" and "prometheus" in services
