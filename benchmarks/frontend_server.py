"""`turnspec bench frontend`'s server, in a process of its own as in production: turnspec's
front ends over `FakeFixedRateEngine`, on free ports, until its stdin closes."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


def child_main(argv: list[str]) -> None:
    """The server side, in its own process: argv = model_dir first_token_ms interval_ms tokens
    [otlp_endpoint]. Prints "PORTS <http> <grpc>" when serving; stops when stdin closes."""
    import sys

    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.fake import FakeFixedRateEngine
    from turnspec.server.app import ServerApp
    from turnspec.server.config import ServerConfig
    from turnspec.server.tracing import TracingConfig, build_tracer_provider

    model_dir, first_token_ms, interval_ms, tokens = argv[0], *map(float, argv[1:4])
    otlp = argv[4] if len(argv) > 4 else None

    async def main() -> None:
        chat = ChatTemplate.from_model_dir(model_dir)
        engine = FakeFixedRateEngine(chat, first_token_ms=first_token_ms,
                                     interval_ms=interval_ms, tokens_per_request=int(tokens))
        app = ServerApp(engine, ServerConfig(port=0, grpc_port=0, max_running=1024,
                                             max_queue=1024),
                        build_tracer_provider(TracingConfig(otlp_endpoint=otlp)))
        await app.start()
        print(f"PORTS {app.port} {app.grpc_port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await app.shutdown(drain_seconds=1.0)

    asyncio.run(main())


def start_child(args: argparse.Namespace, model_dir: str,
                otlp: str | None = None) -> tuple[Any, int, int]:
    import subprocess
    import sys

    code = ("import sys; from turnspec.benchmarks.frontend_server import child_main; "
            "child_main(sys.argv[1:])")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, model_dir, str(args.first_token_ms),
         str(args.interval_ms), str(args.tokens), *([otlp] if otlp else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # ends if the child dies
        if line.startswith("PORTS "):
            _, port, grpc_port = line.split()
            return proc, int(port), int(grpc_port)
    raise RuntimeError(f"the benchmark server exited with code {proc.wait()} before serving")
