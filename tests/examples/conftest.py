"""examples/ against a real server: each script runs as a user runs it (its own process, its
`--json` transcript), talking to a server on 127.0.0.1 over the server tests' SmolLM2 engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.srv_helpers import scrape, start_server, wait_engine_idle

__all__ = ["run_example", "server"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MAX_TOKENS = "48"  # a book_table call is ~30 tokens; replies are cut here


@pytest.fixture(scope="module")
def server(local_engine):
    srv = start_server(local_engine)
    yield srv
    srv.stop()


def run_example(name: str, tmp_path: Path, port: int, transport: str, *args: str) -> dict:
    """Run examples/NAME with `args` and `--json`; its transcript, after checking that the
    server counted exactly one cancelled turn on `transport` (the script's barge-in) and
    that the engine holds no sequence afterwards."""
    key = f'turnspec_requests_total{{outcome="cancelled",transport="{transport}"}}'
    before = scrape(port).get(key, 0)
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args, "--max-tokens",
                           MAX_TOKENS, "--json", str(out)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "you> Thanks, that's all." in proc.stdout and "server ms: ttft" in proc.stdout
    m = wait_engine_idle(port)
    assert m["turnspec_engine_active_sequences"] == 0
    assert m.get(key, 0) == before + 1, proc.stdout
    return json.loads(out.read_text())
