"""Does the engine's GIL, or only its CPU, delay the server's event loop? An asyncio TCP echo
server runs while the embedded engine (SmolLM2 + the default drafter, batches of 4 prompts of
400 tokens, 48 new tokens each, back to back) works either in a thread of the same process or
in a child process; a third process sends 100-byte messages every 20 ms over loopback and
times each echo. Same engine work in both modes: if the process mode's echo tail is no
shorter, moving the engine out of the server process would not shorten the requests' wait.

    python scripts/loadtest/loop_wake.py --modes idle,thread,process --threads 0 --out F.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import socket
import threading
import time
from pathlib import Path

from turnspec.loadtest.stats import summarize


def engine_work(stop, loaded, threads: int) -> None:
    from turnspec.engine.local.args import resolve_model_dir
    from turnspec.engine.local.config import LocalEngineConfig
    from turnspec.engine.local.engine import LocalEngine
    from turnspec.engine.protocol import SamplingParams

    eng = LocalEngine(LocalEngineConfig(model_dir=resolve_model_dir(None), speculator="default",
                                        threads=threads or None))
    eng.load()
    prompts = [[100 + (i * 7 + j) % 5000 for j in range(400)] for i in range(4)]
    loaded.set()
    n = 0
    while not stop.is_set():
        eng.generate_batch([[n] + p for p in prompts], SamplingParams(max_tokens=48,
                                                                      ignore_eos=True))
        n += 1


def client(port: int, n: int, out) -> None:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(n):
        t = time.perf_counter()
        s.sendall(b"x" * 100)
        got = 0
        while got < 100:
            got += len(s.recv(100 - got))
        rtts.append((time.perf_counter() - t) * 1000.0)
        time.sleep(0.02)
    out.put(rtts)


async def measure(mode: str, threads: int, n: int) -> dict[str, float | str | int]:
    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while data := await r.read(100):
            w.write(data)

    srv = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    ctx = mp.get_context("spawn")
    stop, loaded = (ctx.Event(), ctx.Event()) if mode == "process" else \
        (threading.Event(), threading.Event())
    if mode == "thread":
        threading.Thread(target=engine_work, args=(stop, loaded, threads), daemon=True).start()
    elif mode == "process":
        ctx.Process(target=engine_work, args=(stop, loaded, threads), daemon=True).start()
    elif mode == "idle":
        loaded.set()
    else:
        raise ValueError(f"mode: expected idle, thread or process, got {mode!r}")
    while not loaded.is_set():
        await asyncio.sleep(0.1)
    await asyncio.sleep(2.0)  # past the first batch
    q = ctx.Queue()
    c = ctx.Process(target=client, args=(port, n, q))
    c.start()
    while c.is_alive() and q.empty():
        await asyncio.sleep(0.05)
    stop.set()
    srv.close()
    if q.empty():
        raise RuntimeError(f"the echo client exited with {c.exitcode} before reporting its times")
    st = summarize(q.get())  # the load test's percentiles
    return {"mode": mode, "engine_threads": threads or "default", "echoes": st["n"],
            **{f"{k}_ms": round(st[k], 3) for k in ("p50", "p90", "p99", "max")}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="idle,thread,process")
    p.add_argument("--threads", type=int, default=0, help="engine torch threads (0: default)")
    p.add_argument("--echoes", type=int, default=1000)
    p.add_argument("--out", default="out/loop_wake.json")
    args = p.parse_args()
    rows = [asyncio.run(measure(m, args.threads, args.echoes)) for m in args.modes.split(",")]
    print(f"{'mode':8s} {'threads':>8s} {'p50':>7s} {'p90':>7s} {'p99':>7s} {'max':>7s}  echo ms")
    for r in rows:
        print(f"{r['mode']:8s} {r['engine_threads']!s:>8s} {r['p50_ms']:7.3f} {r['p90_ms']:7.3f} "
              f"{r['p99_ms']:7.3f} {r['max_ms']:7.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
