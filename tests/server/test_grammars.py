"""Tool grammars off the request path (server/grammars.py), on a real server (SmolLM2) over real
WebSockets: a new tool set's compile starts when the turn declares its tools, before the prompt
renders, and runs on the grammar threads, never the event loop's; a preloaded tool set, or one
an earlier turn declared, is served without a compile and without a wait. The checks count
calls and name threads; none of them times anything."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from turnspec.loadtest.clients import ResponsesSocketClient
from turnspec.server.grammars import PRELOAD_CHOICES, load_tool_sets
from turnspec.tools_grammar.schema import ToolChoice, parse_tools

from .srv_helpers import start_server


def _tools(tag: str) -> list[dict]:
    """Three functions whose names no other test uses: a never-seen tool set."""
    return [{"type": "function", "name": f"{verb}_{tag}", "description": f"{verb} a booking",
             "parameters": {"type": "object", "properties": {"ref": {"type": "string"}},
                            "required": ["ref"]}} for verb in ("find", "move", "cancel")]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # no loop runs on this thread
        return None


class Spy:
    """Counts GrammarCompiler.prepare calls (the compile step) and where they ran; notes what
    the grammars had declared when each prompt render started."""

    def __init__(self, srv, monkeypatch) -> None:
        self.srv, self.prepared, self.on_loop, self.declared_at_render = srv, [], [], []
        compiler, chat = srv.hub.chat.grammar_compiler, srv.hub.chat
        prepare, render = compiler.prepare, chat.prompt_parts

        def spy_prepare(*a, **k):
            self.prepared.append(threading.current_thread().name)
            self.on_loop.append(_running_loop() is srv.loop)
            return prepare(*a, **k)

        def spy_render(*a, **k):
            self.declared_at_render.append(srv.hub.grammars.stats.declared)
            return render(*a, **k)

        monkeypatch.setattr(compiler, "prepare", spy_prepare)
        monkeypatch.setattr(chat, "prompt_parts", spy_render)


async def _turn(port: int, tools: list[dict], tool_choice: str = "auto"):
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    try:
        return await ws.create("Please move my booking A17 to Friday.", tools=tools,
                               tool_choice=tool_choice, max_output_tokens=4)
    finally:
        await ws.close()


@pytest.fixture(scope="module")
def preload_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("preload") / "tools.jsonl"
    path.write_text(json.dumps(_tools("preloaded")) + "\n\n"
                    + json.dumps({"tools": _tools("named"), "tool_choice": "required"}) + "\n")
    return path


@pytest.fixture(scope="module")
def srv(local_engine, preload_file):
    server = start_server(local_engine, tools_preload=load_tool_sets(preload_file))
    yield server
    server.stop()


def test_new_tool_set_compiles_off_the_loop_from_its_declaration(srv, monkeypatch) -> None:
    spy = Spy(srv, monkeypatch)
    before = srv.hub.grammars.stats.declared
    rec = asyncio.run(_turn(srv.port, _tools("never_seen")))
    assert rec.ok, rec.error
    # declared before the template rendered the prompt, compiled once, on a grammar thread
    assert spy.declared_at_render == [before + 1]
    assert len(spy.prepared) == 1 and spy.prepared[0].startswith("turnspec-grammar")
    assert spy.on_loop == [False]  # not on the server's event loop


def test_ready_tool_sets_are_served_without_compile_or_wait(srv, monkeypatch) -> None:
    grammars = srv.hub.grammars
    # the preload ran at start: 2 shapes for the bare array, 1 for the named line
    assert grammars.stats.declared >= len(PRELOAD_CHOICES) + 1
    spy = Spy(srv, monkeypatch)
    stats = grammars.stats
    for tools, choice in ((_tools("preloaded"), "auto"), (_tools("preloaded"), "required"),
                          (_tools("named"), "required")):
        ready, waited = stats.ready, stats.waited
        rec = asyncio.run(_turn(srv.port, tools, choice))
        assert rec.ok, rec.error
        assert (stats.ready, stats.waited) == (ready + 1, waited)
    assert spy.prepared == []  # no compile: every grammar was prepared before its turn
    # a set one turn declared serves the next turn (another connection) the same way
    rec = asyncio.run(_turn(srv.port, _tools("second_turn")))
    assert rec.ok and len(spy.prepared) == 1
    ready, waited = stats.ready, stats.waited
    rec = asyncio.run(_turn(srv.port, _tools("second_turn")))
    assert rec.ok and len(spy.prepared) == 1
    assert (stats.ready, stats.waited) == (ready + 1, waited)
    assert stats.threads and all(t.startswith("turnspec-grammar") for t in stats.threads)


async def _warm_then_turn(port: int, tools: list[dict]):
    """A Responses warm-up (`generate: false`) carrying the tools, then, once the server has
    prepared them (polled, not timed), the first generated turn, continuing the warm-up."""
    ws = await ResponsesSocketClient(f"ws://127.0.0.1:{port}/v1/responses").connect()
    try:
        warm = await ws.create([], instructions="You book tables.", tools=tools, generate=False)
        yield warm
        yield await ws.create("Please move my booking A17 to Friday.", tools=tools,
                              previous_response_id=warm.response_id, max_output_tokens=4,
                              instructions="You book tables.")
    finally:
        await ws.close()


def test_warm_up_declares_the_tools_for_the_first_turn(srv, monkeypatch) -> None:
    spy, stats = Spy(srv, monkeypatch), srv.hub.grammars.stats

    async def run():
        turns = _warm_then_turn(srv.port, _tools("warmed"))
        warm = await anext(turns)
        assert warm.ok and warm.response_id and warm.text == "" and warm.tool_calls == []
        assert warm.usage["output_tokens"] == 0 and spy.declared_at_render == []  # no render
        while srv.hub.grammars.pending:  # the compile the warm-up started
            await asyncio.sleep(0.01)
        assert len(spy.prepared) == 1 and spy.on_loop == [False]
        ready, waited = stats.ready, stats.waited
        turn = await anext(turns)
        assert turn.ok, turn.error
        assert (stats.ready, stats.waited) == (ready + 1, waited)
        assert len(spy.prepared) == 1  # the first turn compiled nothing
        await turns.aclose()

    asyncio.run(run())


def test_load_tool_sets_reads_and_checks_each_line(tmp_path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(_tools("a")) + "\n" + json.dumps(
        {"tools": _tools("b"), "tool_choice": ["auto", {"type": "function", "name": "move_b"}],
         "parallel_tool_calls": True}) + "\n")
    shapes = load_tool_sets(good)
    assert [(s.choice, s.parallel_tool_calls) for s in shapes] == [
        (ToolChoice("auto"), False), (ToolChoice("required"), False),
        (ToolChoice("auto"), True), (ToolChoice("function", "move_b"), True)]
    assert shapes[0].tools == tuple(parse_tools(_tools("a")))
    bad = {"not json": "not JSON", "{\"tool\": []}": "with 'tools'",
           "{\"tools\": 3}": "an array of tools, got int",
           "[{\"type\": \"function\", \"name\": \"x y\"}]": "tools.0..name",
           json.dumps({"tools": _tools("c"), "tool_choice": "none"}): "'none'",
           json.dumps({"tools": _tools("c"), "extra": 1}): "unknown field",
           json.dumps({"tools": _tools("c"), "parallel_tool_calls": "yes"}): "true or false",
           "[]": "at least one tool"}
    for line, says in bad.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(_tools("d")) + "\n" + line + "\n")
        with pytest.raises(ValueError, match=f"bad.jsonl:2: .*{says}"):
            load_tool_sets(path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no tool sets"):
        load_tool_sets(tmp_path / "empty.jsonl")
    with pytest.raises(ValueError, match="cannot read"):
        load_tool_sets(tmp_path / "missing.jsonl")


@pytest.fixture(scope="module")
def tag_srv(smollm2_dir, preload_file):
    """A server whose engine takes the structural tag and compiles it itself, as SGLang does
    (here the deliberately fake engine, set so): it keeps what the server hands it."""
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.fake import FakeFixedRateEngine

    engine = FakeFixedRateEngine(ChatTemplate.from_model_dir(smollm2_dir), first_token_ms=1.0,
                                 interval_ms=1.0, tokens_per_request=2)
    engine.takes_structural_tag = True
    engine.backend_tags, engine.requests = [], []
    generate = engine.generate

    async def prepare_grammar(grammar) -> None:
        engine.backend_tags.append(grammar.structural_tag)

    def keep(request):
        engine.requests.append(request)
        return generate(request)

    engine.prepare_grammar, engine.generate = prepare_grammar, keep
    server = start_server(engine, tools_preload=load_tool_sets(preload_file))
    yield server, engine
    server.stop()


def test_a_backend_that_compiles_gets_the_tag_alone_and_ahead_of_turns(tag_srv, monkeypatch):
    srv, engine = tag_srv
    stats = srv.hub.grammars.stats
    assert len(engine.backend_tags) == stats.backend_prepared == 3  # the preload, before ready
    spy = Spy(srv, monkeypatch)

    async def run():
        rec = await _turn(srv.port, _tools("tag_turn"))  # a turn's own: the backend compiles
        assert rec.ok, rec.error
        turns = _warm_then_turn(srv.port, _tools("tag_warm"))
        assert (await anext(turns)).ok
        while stats.backend_prepared < 4:  # the warm-up's shape, handed over ahead
            await asyncio.sleep(0.01)
        assert (await anext(turns)).ok
        await turns.aclose()

    asyncio.run(run())
    assert spy.prepared == []  # nothing compiled in this process
    assert len(engine.backend_tags) == 4
    sent = [r.grammar.structural_tag for r in engine.requests[-2:]]
    assert sent[1] == engine.backend_tags[-1] and sent[0] not in engine.backend_tags
    assert all(type(r.grammar).__name__ == "StructuralTagGrammar" for r in engine.requests[-2:])
