"""`turnspec speculator datagen --engine sglang`: the same prompts answered by SGLang's
in-process engine (`sglang.Engine`, its offline batch `generate`), for GPU machines.

Prompts go in as our rendered token ids, the plan's prompts in chunks of `--batch-size` (1024 by
default) per `generate` call: SGLang's scheduler batches a call's prompts itself, continuously,
so a large call keeps its batch full for longer (a call's last answers are its tail, the next
call waits for them). Sampling is greedy and stops
where the local engine stops: on the model's EOS ids (config.json's `eos_token_id` and the
tokenizer's: `ChatTemplate.stop_token_ids`, the set `EngineCore.eos_ids` is), the stop token
kept as the completion's last, or after `--max-new-tokens`. Each completion is checked against
that rule (`completion`), so the records are the ones the local engine would write for the
same tokens. The engine is created in the CLI's main process (it spawns its scheduler and
detokenizer) and shut down in `close`.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection, Iterable, Iterator
from itertools import islice
from typing import Any

from turnspec.engine.sglang import SGLangConfig
from turnspec.speculator.datagen import AnswerFn


def greedy_params(max_new_tokens: int, stop_ids: Collection[int]) -> dict[str, Any]:
    """SGLang sampling_params for greedy datagen: temperature 0 (SGLang samples top_k=1) and no
    penalties (the local engine's plain argmax, whatever a model's generation_config says), at
    most max_new_tokens, stopping on stop_ids (SGLang adds the model's own EOS ids; `completion`
    refuses a stop on any other)."""
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: expected an integer >= 1, got {max_new_tokens!r}")
    if not stop_ids:
        raise ValueError("stop_ids: expected the model's EOS ids, got none")
    return {"temperature": 0.0, "max_new_tokens": max_new_tokens,
            "stop_token_ids": sorted(stop_ids), "ignore_eos": False, "repetition_penalty": 1.0,
            "frequency_penalty": 0.0, "presence_penalty": 0.0, "min_new_tokens": 0}


def completion(result: dict[str, Any], max_new_tokens: int, stop_ids: Collection[int],
               counts: dict[str, int] | None = None) -> list[int]:
    """One result of SGLang's batch `generate` ({"output_ids": [...], "meta_info":
    {"finish_reason": {"type": ...}, "completion_tokens": n, ...}}) -> the completion the local
    engine returns: the ids through the first stop id (kept), at most max_new_tokens.

    A finish other than stop/length (abort) is an error, and so is a "stop" whose ids hold no
    stop id (SGLang stopped where the local engine would have gone on). `counts`, if given,
    gains prompt_tokens and cached_prompt_tokens from meta_info, as the local engine counts."""
    meta = result.get("meta_info") or {}
    fin = meta.get("finish_reason")
    kind = fin.get("type") if isinstance(fin, dict) else fin
    if kind not in ("stop", "length"):
        raise ValueError(f"sglang finished a prompt with {fin!r}; expected a stop or length finish")
    ids = [int(t) for t in result.get("output_ids") or ()]
    told = meta.get("completion_tokens")
    if told is not None and int(told) != len(ids):
        raise ValueError(f"sglang returned {len(ids)} output_ids for completion_tokens={told}; "
                         "expected every generated id")
    stops = frozenset(stop_ids)
    end = next((i + 1 for i, t in enumerate(ids) if t in stops), len(ids))
    ids = ids[:min(end, max_new_tokens)]
    if kind == "stop" and not (ids and ids[-1] in stops):
        matched = fin.get("matched") if isinstance(fin, dict) else None
        raise ValueError(f"sglang stopped on {matched!r}, which the local engine does not stop "
                         f"on (its stop ids: {sorted(stops)}); expected the same stops")
    if counts is not None:
        for ours, theirs in (("prompt_tokens", "prompt_tokens"),
                             ("cached_prompt_tokens", "cached_tokens")):
            counts[ours] = counts.get(ours, 0) + int(meta.get(theirs) or 0)
    return ids


def in_chunks(answer: AnswerFn, prompts: Iterable[list[int]],
              size: int) -> Iterator[tuple[int, list[int]]]:
    """A StreamFn over a batch AnswerFn: `size` prompts at a time (fewer at the end, or where
    the stream stops: a time budget), each yielded as (index into prompts, completion)."""
    if size < 1:
        raise ValueError(f"size: expected >= 1, got {size}")
    source, start = iter(prompts), 0
    while chunk := list(islice(source, size)):
        completions = answer(chunk)
        if len(completions) != len(chunk):
            raise ValueError(f"answer returned {len(completions)} completions for {len(chunk)} "
                             "prompts; expected one per prompt")
        yield from enumerate(completions, start)
        start += len(chunk)


class SGLangTarget:
    """`sglang.Engine` with `turnspec serve --engine sglang`'s keyword arguments
    (SGLangConfig.engine_kwargs: bf16, triton attention, pytorch sampling, --sglang-arg last)."""

    name = "sglang"
    batch_size = 1024

    def __init__(self, args: argparse.Namespace) -> None:
        from turnspec.engine.chat import ChatTemplate
        from turnspec.engine.sglang_args import sglang_config_from_args

        self.cfg: SGLangConfig = sglang_config_from_args(args)
        self.model_dir = self.cfg.model_dir
        self.speculator = args.speculator
        self.stop_ids = frozenset(ChatTemplate.from_model_dir(self.model_dir).stop_token_ids)
        self.counts: dict[str, int] = {"prompt_tokens": 0, "cached_prompt_tokens": 0}
        self._engine: Any = None

    def load(self, workload: int) -> None:
        """Start SGLang's scheduler (weights, CUDA graphs), then one short request, so the
        kernels its first prefill compiles are compiled before the timing starts (the local
        engine warms up at load too). Our ids go in as they are, so no template check is
        needed: SGLang's tokenizer only detokenizes (text we drop)."""
        import sglang

        self._engine = sglang.Engine(**self.cfg.engine_kwargs())
        self._engine.generate(input_ids=[[min(self.stop_ids)] * 32], sampling_params={
            "max_new_tokens": 4, "temperature": 0.0, "ignore_eos": True})

    def meta(self) -> dict[str, Any]:
        # the local engine's keys; SGLang sizes its own batches and threads
        return {"max_batch": None, "max_prefill_tokens": None, "speculator": self.speculator,
                "feed": "chunks", "admit_min_free": None, "threads": None, "tool_grammar": "off"}

    def register(self, items: list) -> None:
        """Nothing to remember: --tool-grammar is refused with --engine sglang."""

    def feed(self, max_new_tokens: int, batch_size: int) -> dict[str, Any]:
        """One prompt stream (the plan's batches back to back, so a small group's batch does
        not run alone), handed over `batch_size` prompts per `generate` call."""
        engine, stops, counts = self._engine, self.stop_ids, self.counts
        assert engine is not None, "load() first"
        params = greedy_params(max_new_tokens, stops)

        def answer(prompts: list[list[int]]) -> list[list[int]]:
            results = engine.generate(input_ids=prompts, sampling_params=params)
            if not isinstance(results, list):   # in_chunks checks there is one per prompt
                raise ValueError(f"sglang generate returned {type(results).__name__} for a "
                                 "batch of prompts; expected a list of results")
            return [completion(r, max_new_tokens, stops, counts) for r in results]

        return {"answer": None, "stream": lambda ps: in_chunks(answer, ps, batch_size)}

    def sample(self, prompts: list[list[int]], temperature: float, top_p: float,
               max_new_tokens: int) -> list[list[int]]:
        """Completions of `prompts` at that temperature (0: greedy_params), each through its stop
        id (kept) or max_new_tokens; speculator/magpie.py's SampleFn. SGLang draws each request's
        sample on its own, so the lines differ from run to run."""
        assert self._engine is not None, "load() first"
        params = greedy_params(max_new_tokens, self.stop_ids)
        if temperature > 0:
            params.update(temperature=temperature, top_p=top_p)
        results = self._engine.generate(input_ids=prompts, sampling_params=params)
        if not isinstance(results, list) or len(results) != len(prompts):
            raise ValueError(f"sglang generate returned {type(results).__name__} for "
                             f"{len(prompts)} prompts; expected one result per prompt")
        return [completion(r, max_new_tokens, self.stop_ids) for r in results]

    def close(self) -> None:
        if self._engine is not None:
            engine, self._engine = self._engine, None
            engine.shutdown()
