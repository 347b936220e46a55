"""`turnspec chat`: talk to the embedded engine in the terminal, one line per user turn.

Each turn continues the conversation's token ids (`ChatTemplate.render_continuation`), so the
prefix cache serves every earlier turn and only the new line is prefilled, as over the
WebSocket's `previous_response_id`. Reads stdin until EOF or `/quit`; works piped too:

    printf 'hi\\nwhat can you do?\\n' | turnspec chat --max-tokens 64
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid

from turnspec.engine.local.args import add_engine_args, default_speculator, engine_config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("chat", help="interactive multi-turn chat with the embedded engine")
    p.add_argument("--system", default=None, help="system message")
    p.add_argument("--max-tokens", type=int, default=256, help="per reply")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--stats", action="store_true",
                   help="after each reply, print its prompt/cached/new tokens and TTFT")
    add_engine_args(p, speculator_default=default_speculator())
    p.set_defaults(func=run)


async def _chat(args: argparse.Namespace) -> None:
    from turnspec.engine.local import LocalEngine
    from turnspec.engine.protocol import GenerateRequest, SamplingParams

    engine = LocalEngine(engine_config_from_args(args))
    await engine.start()
    sampling = SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens)
    messages = [{"role": "system", "content": args.system}] if args.system else []
    history: list[int] = []  # prompt + reply ids of the last turn: what the KV cache holds
    interactive = sys.stdin.isatty()
    try:
        while True:
            line = await asyncio.to_thread(_read_line, "you> " if interactive else "")
            if line is None or line.strip() == "/quit":
                return
            if not line.strip():
                continue
            messages.append({"role": "user", "content": line.strip()})
            prompt = (engine.chat.render_continuation(history, messages, None) if history
                      else engine.chat.render(messages))
            req = GenerateRequest(f"chat-{uuid.uuid4().hex[:8]}", prompt, sampling)
            reply, ids, final = [], [], None
            sys.stdout.write("bot> " if interactive else "")
            async for d in engine.generate(req):
                reply.append(d.text)
                ids.extend(d.token_ids)
                sys.stdout.write(d.text)
                sys.stdout.flush()
                final = d if d.finished else final
            print()
            if final is None or final.finish_reason == "error":
                raise SystemExit(f"generation failed: {final.error if final else 'no final delta'}")
            if args.stats and final.timing is not None:
                t = final.timing
                print(f"[prompt {t.prompt_tokens} tokens, {t.cached_tokens} cached, "
                      f"{t.completion_tokens} new; ttft {t.first_token_ms:.1f} ms]")
            messages.append({"role": "assistant", "content": "".join(reply)})
            history = prompt + ids
    finally:
        await engine.shutdown()


def _read_line(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def run(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_chat(args))
    except KeyboardInterrupt:
        return 130
    return 0
