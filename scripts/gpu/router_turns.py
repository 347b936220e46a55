"""Multi-turn conversations through sglang-router: is turn N served where turns 1..N-1 left KV?

Each conversation has its own system prompt (so only its own earlier turns can be cached), and
its turns go out one after another over HTTP (`/v1/chat/completions`), several conversations at
once. SGLang workers started with `--enable-cache-report` return the prompt's cached tokens in
`usage.prompt_tokens_details`; a turn routed to the worker that served the conversation's
previous turn finds that turn's prefix in its radix cache, one routed elsewhere starts cold.
With `--routing-key`, each request carries the conversation id in `x-smg-routing-key` (the
router's `manual` policy keeps a key on one worker).

    python scripts/gpu/router_turns.py --url http://127.0.0.1:30000 --out router-cache_aware.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

USER_LINES = ["hi, um, can you check if you're open on sunday",
              "okay and what about parking, is there parking nearby",
              "great, can I book a table for four at seven",
              "actually make that six people, sorry"]
BUSINESSES = ["a pizza place", "a dental clinic", "a bike repair shop", "a hotel", "a bakery",
              "a car rental desk", "a pharmacy", "a yoga studio"]


def post(url: str, body: dict, key: str | None) -> dict:
    headers = {"content-type": "application/json"}
    if key:
        headers["x-smg-routing-key"] = key
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def conversation(i: int, args: argparse.Namespace) -> list[dict]:
    system = (f"Conversation {i:04d}. You are the phone assistant of {BUSINESSES[i % 8]} number "
              f"{i}. Answer in one short spoken sentence. " + " ".join(
                  f"Policy {k}: be polite, confirm details, and never invent prices." for k in range(12)))
    messages = [{"role": "system", "content": system}]
    turns = []
    for t in range(args.turns):
        messages.append({"role": "user", "content": USER_LINES[t % len(USER_LINES)]})
        try:
            out = post(args.url, {"model": args.model, "messages": messages,
                                  "max_tokens": args.max_tokens, "temperature": 0},
                       f"conv-{i}" if args.routing_key else None)
        except OSError as e:  # counted, and the conversation ends: its next turn needs this reply
            turns.append({"conversation": i, "turn": t + 1, "error": f"{type(e).__name__}: {e}"})
            break
        usage = out.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        turns.append({"conversation": i, "turn": t + 1, "prompt_tokens": usage.get("prompt_tokens"),
                      "cached_tokens": cached})
        messages.append({"role": "assistant", "content": out["choices"][0]["message"]["content"]})
    return turns


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--model", help="model id (default: the first of GET /v1/models)")
    p.add_argument("--conversations", type=int, default=16)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--routing-key", action="store_true", help="send x-smg-routing-key: conv-<i>")
    p.add_argument("--label", default="")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for _ in range(120):  # a router answers 503 until it has seen a healthy worker
        try:
            with urllib.request.urlopen(args.url + "/v1/models", timeout=10) as r:
                models = json.loads(r.read())["data"]
            break
        except OSError:
            time.sleep(1)
    else:
        raise SystemExit(f"{args.url}/v1/models: no answer in 120 s")
    args.model = args.model or models[0]["id"]
    with ThreadPoolExecutor(args.concurrency) as pool:
        rows = [r for conv in pool.map(lambda i: conversation(i, args), range(args.conversations))
                for r in conv]
    errors = [r for r in rows if "error" in r]
    later = [r for r in rows if r["turn"] > 1 and r.get("cached_tokens") is not None]
    warm = [r for r in later if r["cached_tokens"] > 0.5 * r["prompt_tokens"]]
    summary = {"label": args.label, "errors": len(errors), "turns_after_first": len(later),
               "turns_mostly_cached": len(warm),
               "cached_share_mean": round(statistics.mean(
                   r["cached_tokens"] / r["prompt_tokens"] for r in later), 3) if later else None}
    Path(args.out).write_text(json.dumps({"summary": summary, "turns": rows}, indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
