"""`turnspec serve`: one process with HTTP + WebSocket on --host/--port and gRPC on --grpc-port.

    turnspec serve                       # SmolLM2 on CPU, 127.0.0.1:8000 and :50051
    turnspec serve --port 0 --grpc-port 0 --api-key secret
    turnspec serve --engine fake-fixed-rate --fake-first-token-ms 200 --fake-interval-ms 50

The API key comes from --api-key or, if absent, the TURNSPEC_API_KEY environment variable
(read here, once). SIGTERM/SIGINT drain in-flight streams for --drain-seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

from turnspec.cli.serve_limits import add_limit_args, limit_config_from_args
from turnspec.engine.local.args import (
    add_engine_args,
    default_speculator,
    engine_config_from_args,
    resolve_model_dir,
)
from turnspec.engine.protocol import Engine
from turnspec.engine.sglang_args import add_sglang_args, other_engine_flags, sglang_config_from_args
from turnspec.server.config import ServerConfig
from turnspec.server.grammars import load_tool_sets
from turnspec.server.recorder import RecorderConfig, read_redact_file
from turnspec.server.tracing import OTLP_PROTOCOLS, TracingConfig, build_tracer_provider

API_KEY_ENV = "TURNSPEC_API_KEY"
FAKE_ENGINE = "fake-fixed-rate"  # engine/fake.py: known answers for load tools
_DEFAULTS = ServerConfig()  # the voice-safe defaults the flags start from
EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="serve WebSocket, HTTP (OpenAI) and gRPC")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="HTTP + WebSocket (0: pick a free one)")
    p.add_argument("--grpc-port", type=int, default=50051,
                   help="gRPC (0: pick a free one, -1: no gRPC)")
    p.add_argument("--engine", choices=("local", "sglang", FAKE_ENGINE), default="local",
                   help=f"{FAKE_ENGINE} is deliberately fake (see its flags)")
    p.add_argument("--api-key", default=None,
                   help=f"require 'Authorization: Bearer KEY' (default: ${API_KEY_ENV}, else none)")
    p.add_argument("--max-running", type=int, default=64,
                   help="turns handed to the engine at once (default: %(default)s)")
    p.add_argument("--max-queue", type=int, default=256,
                   help="turns waiting for a slot before new ones get 429 (default: %(default)s)")
    p.add_argument("--default-max-tokens", type=int, default=_DEFAULTS.default_max_tokens,
                   help="output budget of a turn that sets none (default: %(default)s; "
                        "docs/voice-defaults.md)")
    p.add_argument("--default-temperature", type=float, default=_DEFAULTS.default_temperature,
                   help="temperature of a turn that sends none (default: %(default)s)")
    p.add_argument("--default-top-p", type=float, default=_DEFAULTS.default_top_p,
                   help="top_p of a turn that sends none (default: %(default)s)")
    p.add_argument("--no-loop-guard", dest="loop_guard", action="store_false",
                   help="let a looping turn run to its budget (default: the loop guard ends it "
                        "with a normal stop; a request may send \"loop_guard\": false)")
    p.add_argument("--max-message-bytes", type=int, default=4 << 20)
    p.add_argument("--tools-preload", type=Path, default=None, metavar="FILE",
                   help="prepare these tool sets' grammars before turning ready: one JSON array "
                        "of tools per line (prepared for tool_choice auto and required), or "
                        "{\"tools\": [...], \"tool_choice\"?: one or a list, "
                        "\"parallel_tool_calls\"?: bool}; any other tool set is prepared when "
                        "a turn first declares it")
    p.add_argument("--event-loop", choices=EVENT_LOOPS, default="auto",
                   help="the server's asyncio loop: uvloop (libuv, as SGLang's own server runs), "
                   "asyncio (the standard one), or auto: uvloop where installed (SGLang installs "
                   "it), else asyncio")
    p.add_argument("--drain-seconds", type=float, default=10.0,
                   help="on SIGTERM, how long in-flight streams may finish (default: %(default)s)")
    _add_tracing(p)
    _add_recording(p)
    add_sglang_args(p)
    add_engine_args(p, speculator_default=default_speculator())
    add_fake_engine_args(p)
    add_limit_args(p)
    p.set_defaults(func=run)


def _add_tracing(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("tracing (off by default)")
    t.add_argument("--otlp-endpoint", default=None, metavar="URL",
                   help="export each turn's spans over OTLP to URL (http://HOST:4317 for gRPC; "
                        "a URL ending in /v1/traces, or --otlp-protocol http/protobuf, for HTTP)")
    t.add_argument("--otlp-protocol", choices=OTLP_PROTOCOLS, default="grpc")
    t.add_argument("--trace-console", action="store_true", help="print spans to stdout")
    t.add_argument("--trace-sample", type=float, default=1.0, metavar="RATIO",
                   help="share of turns traced when the client sent no sampled traceparent "
                        "(default: %(default)s)")


def _add_recording(p: argparse.ArgumentParser) -> None:
    r = p.add_argument_group(
        "conversation recording (off by default)",
        "finished turns as JSONL in the workload record schema, for `turnspec speculator datagen "
        "--from-conversations DIR`; written off the event loop, dropped (with a warning) rather "
        "than delaying a stream; the API key is never written")
    r.add_argument("--record-conversations", type=Path, default=None, metavar="DIR",
                   help="record every finished turn (messages, tools, the reply) under DIR")
    r.add_argument("--record-redact", type=Path, default=None, metavar="FILE",
                   help="regexes, one a line, replaced by [redacted] in every message and tool "
                        "call argument before it is written")
    r.add_argument("--record-max-file-mb", type=float, default=64.0,
                   help="start a new file past this size (default: %(default)s)")
    r.add_argument("--record-max-files", type=int, default=50,
                   help="keep this many files, deleting the oldest (default: %(default)s)")


def _sglang_engine(args: argparse.Namespace):
    from turnspec.engine.sglang import INSTALL_HINT, SGLangEngine, sglang_available

    if not sglang_available():  # fail before binding ports or converting a model
        raise ValueError(INSTALL_HINT)
    return SGLangEngine(sglang_config_from_args(args))


def server_config_from_args(args: argparse.Namespace) -> ServerConfig:
    api_key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    return ServerConfig(
        host=args.host, port=args.port,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port, api_key=api_key,
        max_running=args.max_running, max_queue=args.max_queue,
        default_max_tokens=args.default_max_tokens, max_message_bytes=args.max_message_bytes,
        drain_seconds=args.drain_seconds, spec_block_size=args.spec_block_size,
        default_temperature=args.default_temperature, default_top_p=args.default_top_p,
        loop_guard=args.loop_guard, record=_recorder_config(args),
        tools_preload=load_tool_sets(args.tools_preload) if args.tools_preload else (),
        **limit_config_from_args(args))


def _recorder_config(args: argparse.Namespace) -> RecorderConfig | None:
    """--record-* -> RecorderConfig; None (nothing is ever written) without --record-conversations."""
    if args.record_conversations is None:
        if args.record_redact is not None:
            raise ValueError("--record-redact: applies with --record-conversations DIR only")
        return None
    redact = read_redact_file(args.record_redact) if args.record_redact is not None else ()
    return RecorderConfig(folder=args.record_conversations, redact=redact,
                          max_file_bytes=int(args.record_max_file_mb * (1 << 20)),
                          max_files=args.record_max_files)


def add_fake_engine_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        f"fake engine (--engine {FAKE_ENGINE})",
        "DELIBERATELY FAKE: runs no model; token i of every response is ' hi' at exactly "
        "accepted + first-token-ms + i * interval-ms. For measuring front ends and load tools "
        "against known answers only (turnspec loadtest, bench frontend); never serve users.")
    g.add_argument("--fake-first-token-ms", type=float, default=20.0, metavar="D1",
                   help="first-token delay (default: %(default)s)")
    g.add_argument("--fake-interval-ms", type=float, default=10.0, metavar="D2",
                   help="per-token delay after the first (default: %(default)s)")
    g.add_argument("--fake-tokens", type=int, default=64, metavar="N",
                   help="tokens per response, fewer if max_tokens is lower (default: %(default)s)")


def build_fake_engine(args: argparse.Namespace):
    """`FakeFixedRateEngine` with the model folder's chat template (no weights loaded)."""
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.fake import FakeFixedRateEngine

    chat = ChatTemplate.from_model_dir(resolve_model_dir(args.model))
    return FakeFixedRateEngine(chat, first_token_ms=args.fake_first_token_ms,
                               interval_ms=args.fake_interval_ms,
                               tokens_per_request=args.fake_tokens,
                               max_context=args.max_context or 8192)


def build_engine(args: argparse.Namespace):
    if args.engine == FAKE_ENGINE:
        return build_fake_engine(args)
    wrong = other_engine_flags(args, "serve")  # the other engine's flags: say so, not ignore
    if wrong:
        raise ValueError(wrong)
    if args.engine == "local":
        from turnspec.engine.local import LocalEngine

        return LocalEngine(engine_config_from_args(args))
    return _sglang_engine(args)


async def _serve(args: argparse.Namespace, engine: Engine, config: ServerConfig) -> int:
    from turnspec.server.app import ServerApp

    tracing = TracingConfig(otlp_endpoint=args.otlp_endpoint, otlp_protocol=args.otlp_protocol,
                            console=args.trace_console, sample_ratio=args.trace_sample)
    app = ServerApp(engine, config, build_tracer_provider(tracing))
    await app.start_transports()
    scheme = "https" if config.tls_cert else "http"
    print(f"turnspec: listening on {scheme}://{config.host}:{app.port} (HTTP, WS) and "
          f"{'gRPC ' + config.host + ':' + str(app.grpc_port) if app.grpc_port else 'no gRPC'}"
          "; loading the engine...", flush=True)
    serving = asyncio.create_task(app.serve_until_signal())
    try:
        await app.start_engine()
    except BaseException:
        app.request_stop()
        await serving
        raise
    print(app.listening(), flush=True)
    print("turnspec: ready", flush=True)
    await serving
    return app.exit_code  # 0, or EXIT_ENGINE_FAILED when the engine died under the server


def event_loop_factory(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The loop `--event-loop` names, as (its name, a factory for asyncio.Runner). uvloop moves
    the socket and timer work of every stream (SGLang's output loop included, where it runs in
    this process) from Python into libuv."""
    if choice not in EVENT_LOOPS:
        raise ValueError(f"--event-loop {choice!r}: expected one of {', '.join(EVENT_LOOPS)}")
    if choice != "asyncio":
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise ValueError("--event-loop uvloop: uvloop is not installed; expected "
                                 "`pip install uvloop`, or --event-loop asyncio") from None
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


def run(args: argparse.Namespace) -> int:
    try:
        config = server_config_from_args(args)  # bad flags fail before the engine loads
        engine = build_engine(args)  # a missing backend fails here, before any port is bound
        loop_name, new_loop = event_loop_factory(args.event_loop)
    except (ValueError, OSError) as e:  # OSError: an unreadable --record-redact file
        print(f"turnspec serve: error: {e}", file=sys.stderr)
        return 2
    print(f"turnspec: event loop {loop_name}", flush=True)
    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            return runner.run(_serve(args, engine, config))
    except KeyboardInterrupt:
        return 130
    except OSError as e:  # port in use, etc.
        print(f"turnspec serve: error: {e}", file=sys.stderr)
        return 1
