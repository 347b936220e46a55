"""`turnspec generate`: one prompt through the chat template, streamed to the terminal, or one
JSON object with --json (contract: text, token_ids, finish_reason, timing, spec)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid

from turnspec.engine.local.args import add_engine_args, default_speculator, engine_config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("generate", help="one-shot generation with the embedded engine")
    p.add_argument("--prompt", required=True, help="user message")
    p.add_argument("--system", default=None, help="system message")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    add_engine_args(p, speculator_default=default_speculator())
    p.set_defaults(func=run)


async def _generate(args: argparse.Namespace) -> dict:
    from turnspec.engine.local import LocalEngine
    from turnspec.engine.protocol import GenerateRequest, SamplingParams

    engine = LocalEngine(engine_config_from_args(args))
    await engine.start()
    messages = ([{"role": "system", "content": args.system}] if args.system else [])
    messages.append({"role": "user", "content": args.prompt})
    ids = engine.chat.render(messages)
    sampling = SamplingParams(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                              seed=args.seed, max_tokens=args.max_tokens)
    req = GenerateRequest(f"gen-{uuid.uuid4().hex[:8]}", ids, sampling)
    text, tokens, final = [], [], None
    async for d in engine.generate(req):
        text.append(d.text)
        tokens.extend(d.token_ids)
        if not args.json and d.text:
            sys.stdout.write(d.text)
            sys.stdout.flush()
        if d.finished:
            final = d
    await engine.shutdown()
    assert final is not None
    if final.finish_reason == "error":
        raise SystemExit(f"generation failed: {final.error}")
    return {
        "text": "".join(text),
        "token_ids": tokens,
        "finish_reason": final.finish_reason,
        "timing": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in final.timing.as_dict().items()},
        "spec": ({"verify_steps": final.spec.verify_steps, "accepted_tokens": final.spec.accepted_tokens,
                  "tau": round(final.spec.tau, 4)} if final.spec else None),
    }


def run(args: argparse.Namespace) -> int:
    out = asyncio.run(_generate(args))
    if args.json:
        print(json.dumps(out))
    else:
        print()
    return 0
