"""`turnspec speculator datagen`: the workload's prompts answered greedily by the target itself.

The prompts are rendered in a child process while the engine loads, in parts (every N-th
conversation of the shard): the engine answers part 0 while the child renders the rest. Run
22's six shards on the H200 host each spent 88-93 s rendering all their prompts (80-86 s of one
busy thread) with the GPU idle, against a ~23 s engine load; rendered in a thread of the engine's
own process, the build also held the GIL the engine's launches need. The prompts are rendered
with the model folder's own chat template (the tokenizer the engine loads too). The engine is
the local one or SGLang's (`--engine`, speculator/datagen_target.py): only the answering
differs, the prompts, their plan, the records and meta.json are this code for both.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import threading
import time
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnspec.speculator.datagen import PromptItem
    from turnspec.speculator.datagen_target import DatagenTarget


def run_datagen(args: argparse.Namespace) -> int:
    from turnspec.speculator.datagen_target import make_target
    from turnspec.speculator.responses import BUILD_KEYS

    if args.eval_set and args.from_conversations is not None:
        raise SystemExit("--eval-set and --from-conversations: expected at most one prompt source")
    target = make_target(args)   # the engine's flags checked (sglang installed) before rendering
    if args.prompt_parts < 1:
        raise SystemExit(f"--prompt-parts: expected >= 1, got {args.prompt_parts}")

    t0 = time.perf_counter()
    builder: PromptParts | FileParts
    if args.eval_set or args.from_conversations is not None:
        builder = FileParts.from_args(args, target.model_dir)
    else:
        # the arguments that fix the prompts: the same keys meta.json records and a rebuild reads
        build = {**{k: getattr(args, k) for k in BUILD_KEYS},
                 "shard": args.shard[0], "num_shards": args.shard[1]}
        builder = PromptParts(target.model_dir, build, args.prompt_parts)
    try:
        target.load(args.workload)
        t1 = time.perf_counter()
        first = builder.next_part()
        # the seconds before the first prompt reaches the engine, and what went into them
        setup = {"engine_load_s": round(t1 - t0, 1), "setup_s": round(time.perf_counter() - t0, 1)}
        stats, cpu = _answer(args, target, first, builder)
    finally:
        try:
            builder.close()
        finally:
            target.close()   # SGLang's scheduler processes, the GPU memory they hold
    per_s = {"samples_per_s": round(stats["written"] / max(stats["seconds"], 1e-9), 1)}
    print(json.dumps({"engine": target.name, **stats, **per_s, **target.counts, **setup,
                      **builder.stats(), **cpu, "skipped_long_prompts": builder.skipped,
                      "out": str(args.out)}))
    return 0


def _answer(args: argparse.Namespace, target: DatagenTarget, first: list[PromptItem],
            builder: PromptParts | FileParts) -> tuple[dict, dict]:
    """Answer part 0, then the others as the builder gives them: generate_dataset's counts and
    the CPU of the answering part (the target's prompt-token counts are in target.counts)."""
    from turnspec.speculator.datagen import generate_dataset
    from turnspec.speculator.thread_cpu import other_threads_cpu, thread_cpu_seconds

    meta = {"model": target.model_dir, "engine": target.name, "sampling": "greedy",
            "max_new_tokens": args.max_new_tokens, **builder.describes(args),
            "skipped_long_prompts": builder.skipped, **target.meta(),
            "shard": f"{args.shard[0]}/{args.shard[1]}",
            "prompt_parts": args.prompt_parts if isinstance(builder, PromptParts) else 1}

    def more() -> Iterator[list[PromptItem]]:
        while (part := builder.next_part()) is not None:
            meta["skipped_long_prompts"] = builder.skipped    # meta.json is rewritten per part
            target.register(part)
            yield part

    target.register(first)

    # CPU of the answering part: the main thread steps the engine (SGLang's scheduler is
    # another process); the others are native threads
    threads0, main0, proc0 = thread_cpu_seconds(), time.thread_time(), time.process_time()
    batch_size = target.batch_size if args.batch_size is None else args.batch_size
    stats = generate_dataset(first, out_dir=args.out, batch_size=batch_size,
                             progress=not args.no_progress, meta=meta,
                             time_budget_s=args.time_budget, seed=args.seed, more=more(),
                             **target.feed(args.max_new_tokens, batch_size))
    cpu = {"process_cpu_s": round(time.process_time() - proc0, 2),
           "main_thread_cpu_s": round(time.thread_time() - main0, 2),
           **other_threads_cpu(threads0, thread_cpu_seconds(), {threading.get_native_id()})}
    return stats, cpu


class FileParts:
    """Prompts from files rather than the workload generator, rendered here at once (a few
    hundred to a few thousand): the independent evaluation set (`--eval-set`, every prompt
    held out) or a deployment's recorded conversations (`--from-conversations DIR`). The same
    interface as `PromptParts`, in one part."""

    def __init__(self, items: list[PromptItem], skipped: int, what: dict) -> None:
        self._items: list[PromptItem] | None = items
        self.skipped, self._what = skipped, what

    @classmethod
    def from_args(cls, args: argparse.Namespace, model_dir: str) -> FileParts:
        from turnspec.engine.chat import ChatTemplate

        if args.shard != (0, 1):
            raise SystemExit("--shard applies to workload prompts only; expected no --shard with "
                             "--eval-set or --from-conversations")
        render = ChatTemplate.from_model_dir(model_dir).render_many
        if args.eval_set:
            from turnspec.speculator.eval_set import eval_prompt_items

            items, skipped = eval_prompt_items(render, args.max_prompt_tokens)
            return cls(items, skipped, {"prompt_source": "eval-set",
                                        "max_prompt_tokens": args.max_prompt_tokens})
        from turnspec.speculator.recorded import recorded_prompt_items

        items, skipped = recorded_prompt_items(render, args.from_conversations,
                                               args.conversations_heldout_frac,
                                               args.max_prompt_tokens)
        if not items:
            raise SystemExit(f"{args.from_conversations}: the recorded conversations hold no "
                             "assistant turn to answer")
        return cls(items, skipped, {
            "prompt_source": "recorded", "from_conversations": str(args.from_conversations),
            "conversations_heldout_frac": args.conversations_heldout_frac,
            "max_prompt_tokens": args.max_prompt_tokens})

    def describes(self, args: argparse.Namespace) -> dict:
        return dict(self._what)

    def next_part(self) -> list[PromptItem] | None:
        items, self._items = self._items, None
        return items

    def stats(self) -> dict:
        return {"prompt_parts": 1, "prompt_parts_used": 1}

    def close(self) -> None:
        pass


class PromptParts:
    """The shard's prompts, rendered part by part in a child process (spawned: the parent
    loads CUDA). `next_part()` waits for the next part, None after the last; the child's
    seconds per part are kept for the run's JSON."""

    def __init__(self, model_dir: str, build: dict, num_parts: int) -> None:
        ctx = mp.get_context("spawn")
        self._queue = ctx.Queue()
        self._proc = ctx.Process(target=_render_parts, args=(self._queue, model_dir, build, num_parts),
                                 name="datagen-prompts", daemon=True)
        self._proc.start()
        self.num_parts, self.received, self.skipped = num_parts, 0, 0
        self._build_s: list[float] = []
        self._cpu_s: list[float] = []

    def next_part(self) -> list[PromptItem] | None:
        if self.received == self.num_parts:
            return None
        while True:
            try:
                msg = self._queue.get(timeout=5)
                break
            except queue.Empty:
                if not self._proc.is_alive():   # killed (OOM, a signal): nothing will come
                    raise SystemExit(f"datagen: the prompt renderer exited (code "
                                     f"{self._proc.exitcode}) before part {self.received}") from None
        if isinstance(msg, str):
            raise SystemExit(f"datagen: rendering prompt part {self.received} failed:\n{msg}")
        items, skipped, build_s, cpu_s = msg
        self.received += 1
        self.skipped += skipped
        self._build_s.append(build_s)
        self._cpu_s.append(cpu_s)
        return items

    def describes(self, args: argparse.Namespace) -> dict:
        """The datagen arguments that fix the prompts (meta.json; what a rebuild reads)."""
        from turnspec.speculator.responses import BUILD_KEYS

        return {k: getattr(args, k) for k in BUILD_KEYS}

    def stats(self) -> dict:
        """Seconds (wall, CPU) the child spent on each part it handed over; the parts a
        budget-cut run never took up are not in them."""
        return {"prompt_parts": self.num_parts, "prompt_parts_used": self.received,
                "prompts_build_s": round(sum(self._build_s), 1),
                "prompts_build_cpu_s": round(sum(self._cpu_s), 1),
                "prompts_first_part_s": round(self._build_s[0], 1) if self._build_s else None}

    def close(self) -> None:
        """Stop the child (a budget-cut run leaves parts it will never take up)."""
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join(timeout=10)
        self._queue.close()


def _render_parts(out, model_dir: str, build: dict, num_parts: int) -> None:
    """Child process: each part's (items, skipped, wall s, CPU s of the rendering thread), in
    order; a traceback string if one fails."""
    try:
        from turnspec.engine.chat import ChatTemplate
        from turnspec.speculator.prompts import build_prompt_items

        chat = ChatTemplate.from_model_dir(model_dir)
        for part in range(num_parts):
            t, cpu = time.perf_counter(), time.thread_time()
            items, skipped = build_prompt_items(chat.render_many, **build, part=part,
                                                num_parts=num_parts)
            out.put((items, skipped, time.perf_counter() - t, time.thread_time() - cpu))
    except Exception:           # the parent raises it with the part's number
        out.put(traceback.format_exc())

