"""A fake SGLang scheduler: a real child process that stands in for SGLang's scheduler in CPU
tests (SGLang runs on CUDA machines only), so a test can kill -9 it under load.

Run as `python fake_sglang_scheduler.py [STEP_S]`. Requests come in as JSON lines on stdin
(`{"op": "generate", "rid", "prompt_tokens", "max_new_tokens"}`, `{"op": "abort", "rid"}`);
every STEP_S seconds it writes, as JSON lines on stdout, one token for each running request
(SGLang's incremental stream chunk: `output_ids`, `text`, `meta_info` with the finish reason on
the last) and its load (the core fields of SGLang 0.5.17's `LoadSnapshot.to_dict()`).
Standalone on purpose: it imports nothing of turnspec, like the process it stands in for.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time

POOL_TOKENS = 4096  # its "KV pool", in token slots


def main(step_s: float) -> None:
    running: dict[str, list[int]] = {}  # rid -> [prompt tokens, generated, max_new_tokens]
    buf = b""
    next_step = time.monotonic() + step_s
    while True:
        ready, _, _ = select.select([0], [], [], max(next_step - time.monotonic(), 0.0))
        if ready:
            data = os.read(0, 1 << 16)
            if not data:
                return  # the parent went away
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                handle(json.loads(line), running)
        if time.monotonic() >= next_step:
            step(running)
            next_step += step_s


def handle(msg: dict, running: dict[str, list[int]]) -> None:
    if msg["op"] == "generate":
        running[msg["rid"]] = [msg["prompt_tokens"], 0, msg["max_new_tokens"]]
    elif msg["op"] == "abort" and msg["rid"] in running:
        prompt, n, _ = running.pop(msg["rid"])
        emit({"rid": msg["rid"], "output_ids": [], "text": "",
              "meta_info": {"finish_reason": {"type": "abort"}, "prompt_tokens": prompt,
                            "completion_tokens": n, "cached_tokens": 0}})


def step(running: dict[str, list[int]]) -> None:
    for rid, state in list(running.items()):
        state[1] += 1
        prompt, n, limit = state
        meta: dict = {"finish_reason": None}
        if n >= limit:
            del running[rid]
            meta = {"finish_reason": {"type": "length", "length": limit},
                    "prompt_tokens": prompt, "completion_tokens": n, "cached_tokens": 0}
        emit({"rid": rid, "output_ids": [1000 + n], "text": f" w{n}", "meta_info": meta})
    used = sum(p + n for p, n, _ in running.values())
    emit({"load": {"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": len(running),
                   "num_waiting_reqs": 0, "num_waiting_uncached_tokens": 0,
                   "num_used_tokens": used, "num_total_tokens": used,
                   "num_active_tokens": used, "max_total_num_tokens": POOL_TOKENS,
                   "max_running_requests": 64, "token_usage": round(used / POOL_TOKENS, 4),
                   "gen_throughput": 0.0, "cache_hit_rate": 0.0, "utilization": 0.0,
                   "total_prefill_uncached_tokens": 0, "total_prefill_busy_us": 0,
                   "decode_moments": None}})
    sys.stdout.flush()


def emit(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.02)
