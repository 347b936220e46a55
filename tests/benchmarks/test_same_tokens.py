"""Same tokens on both sides: `turnspec workload render` + `turnspec loadtest --url .../generate`
give SGLang's native endpoint exactly the prompt ids (and structural tag, and sampling
parameters) that turnspec's server hands its engine for the same turns, in the three modes of
the decomposition (no tools; tools in the prompt; tools and the grammar).

turnspec's side is a real server on 127.0.0.1 (its engine the deliberately fake fixed-rate one,
set to take the grammar as a structural tag as the SGLang engine does; each request it receives
is kept). SGLang is not installed here, so the /generate side is a recording peer: a real HTTP
server that keeps every body it is sent and answers in SGLang 0.5.17's streaming format
(`data: {"text", "output_ids", "meta_info"}` lines, then `data: [DONE]`), cumulative as SGLang's
default or incremental as with --incremental-streaming-output.
"""

from __future__ import annotations

import json

import pytest

from tests.loadtest.sglang_recorder import GenerateRecorder
from turnspec.cli.main import main
from turnspec.engine.chat import ChatTemplate
from turnspec.engine.fake import FakeFixedRateEngine
from turnspec.engine.sglang import sampling_params
from turnspec.server.config import ServerConfig
from turnspec.server.testing import ThreadedServer

CONVERSATIONS = 3


@pytest.fixture(scope="module")
def setup(smollm2_dir, tmp_path_factory):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    engine = FakeFixedRateEngine(chat, first_token_ms=1.0, interval_ms=1.0,
                                 tokens_per_request=3, max_context=8192)
    engine.takes_structural_tag = True  # the server then prepares as for SGLang: the tag alone
    received: list = []
    generate = engine.generate

    def keep(request):
        received.append(request)
        return generate(request)

    engine.generate = keep
    srv = ThreadedServer(engine, ServerConfig(port=0, grpc_port=None)).start()
    recorder = GenerateRecorder().start()
    files = tmp_path_factory.mktemp("tokens")
    for name, extra in (("tools", []), ("no-tools", ["--no-tools"])):
        assert main(["workload", "render", "--out", str(files / f"{name}.jsonl"),
                     "--conversations", str(CONVERSATIONS), "--model", str(smollm2_dir),
                     *extra]) == 0
    yield srv, recorder, received, files
    recorder.stop()
    srv.stop()


def _load(url: str, path, mode: str, out) -> dict:
    turns = sum(len(json.loads(line)["turnspec_tokens"]["turns"])
                for line in path.read_text().splitlines())
    code = main(["loadtest", "--url", url, "--workload", str(path), "--concurrency", "1",
                 "--requests", str(turns), "--tool-mode", mode, "--resend-history",
                 "--no-progress", "--no-rtt-probe", "--history", "", "--out", str(out)])
    res = json.loads(out.read_text())
    assert code == 0 and res["requests"]["ok"] == turns, res["requests"]
    return res


@pytest.mark.parametrize("mode,transport", [("grammar", "ws"), ("prompt", "ws"), ("none", "ws"),
                                            ("grammar", "http")])
def test_generate_gets_the_tokens_turnspec_engine_gets(setup, tmp_path, mode, transport):
    srv, recorder, received, files = setup
    path = files / ("no-tools.jsonl" if mode == "none" else "tools.jsonl")
    received.clear()
    recorder.bodies.clear()
    recorder.incremental = mode == "prompt"
    url = {"ws": f"ws://127.0.0.1:{srv.port}/v1/responses",
           "http": f"http://127.0.0.1:{srv.port}/v1"}[transport]
    _load(url, path, mode, tmp_path / "turnspec.json")
    peer = _load(f"http://127.0.0.1:{recorder.port}/generate", path, mode, tmp_path / "sg.json")
    assert len(received) == len(recorder.bodies) > CONVERSATIONS
    tags = 0
    for request, body in zip(received, recorder.bodies, strict=True):
        assert body["input_ids"] == request.prompt_token_ids
        assert body["sampling_params"] == sampling_params(request)  # engine/sglang.py's
        assert body["stream"] is True
        tags += "structural_tag" in body["sampling_params"]
    assert tags == (len(received) if mode == "grammar" else 0)
    assert peer["metrics"]["output_tokens"]["max"] == 3 and peer["metrics"]["ttft_ms"]["n"]
    if mode == "none":  # no tools in either prompt: shorter than the rendered tools prompt
        with_tools = json.loads((files / "tools.jsonl").read_text().splitlines()[0])
        first = json.loads(path.read_text().splitlines()[0])
        assert len(min(first["turnspec_tokens"]["turns"].values(), key=len)) < len(
            min(with_tools["turnspec_tokens"]["turns"].values(), key=len))


def test_generate_target_needs_a_rendered_file_of_the_right_mode(setup, tmp_path, capsys):
    srv, recorder, _, files = setup
    url = f"http://127.0.0.1:{recorder.port}/generate"
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"id": "c", "messages": [{"role": "user", "content": "hi"}]})
                     + "\n")
    for extra, says in (
            (["--workload", str(files / "tools.jsonl"), "--tool-mode", "none"],
             "rendered with the tools in the prompt; render it with --no-tools"),
            ([], "plays a `turnspec workload render` file"),
            (["--workload", str(plain)], "plain.jsonl:1: no usable turnspec_tokens")):
        assert main(["loadtest", "--url", url, "--requests", "1", "--history", "",
                     *extra]) == 2
        assert says in capsys.readouterr().err
