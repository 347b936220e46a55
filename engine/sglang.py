"""SGLang backend: the Engine protocol over SGLang's in-process async Engine (GPU machines).

Production path: SGLang runs the model with its own kernels, CUDA graphs and DFlash
(`--speculative-algorithm DFLASH`, our exported drafter as `speculative_draft_model_path`);
turnspec keeps the front ends, sessions, chat templates and tool-call parsing. Requests go in
as token ids (our ChatTemplate renders them, so KV reuse across turns is SGLang's radix cache
matching the same ids) and the tool grammar goes as an xgrammar structural tag.

Status: written against SGLang 0.5.x's documented `Engine.async_generate` streaming API
(sglang/srt/entrypoints/engine.py). Not run yet: SGLang cannot serve on the CPU dev machines
and the lent H200 image has no sglang wheel (a 400 MB kernel wheel cannot be carried).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from turnspec.engine.protocol import (
    Delta,
    DeltaStream,
    EngineError,
    EngineStats,
    GenerateRequest,
    SpecStats,
    Timing,
)


@dataclass(slots=True, frozen=True)
class SGLangConfig:
    model_dir: str
    speculator: str = "none"  # "none" | path to a DFlash drafter folder (z-lab layout)
    spec_block_size: int | None = None
    mem_fraction: float = 0.85
    extra: tuple[tuple[str, object], ...] = ()  # more sgl.Engine kwargs

    def __post_init__(self) -> None:
        if not Path(self.model_dir).is_dir():
            raise ValueError(f"model_dir {self.model_dir!r}: expected a local HF model folder")
        if not 0.1 <= self.mem_fraction <= 0.95:
            raise ValueError(f"mem_fraction: expected 0.1..0.95, got {self.mem_fraction}")

    def engine_kwargs(self) -> dict:
        kw: dict = {"model_path": self.model_dir, "mem_fraction_static": self.mem_fraction,
                    "grammar_backend": "xgrammar", "enable_metrics": True,
                    "incremental_streaming_output": True}
        if self.speculator != "none":
            kw |= {"speculative_algorithm": "DFLASH", "speculative_draft_model_path": self.speculator}
            if self.spec_block_size:
                kw["speculative_num_draft_tokens"] = self.spec_block_size
        return kw | dict(self.extra)


class SGLangEngine:
    def __init__(self, cfg: SGLangConfig) -> None:
        self.cfg = cfg
        self.model_name = Path(cfg.model_dir).name
        self._engine = None
        self._active: set[str] = set()
        self._aborted: set[str] = set()
        self._chat = None

    @property
    def chat(self):
        if self._chat is None:
            from turnspec.engine.chat import ChatTemplate

            self._chat = ChatTemplate.from_model_dir(self.cfg.model_dir)
        return self._chat

    @property
    def max_context(self) -> int:
        from turnspec.engine.model.config import ModelConfig

        return ModelConfig.from_model_dir(self.cfg.model_dir).max_position_embeddings

    async def start(self) -> None:
        try:
            import sglang
        except ImportError as e:
            raise EngineError(f"--engine sglang needs the sglang package on a GPU machine ({e})") from None
        self._engine = sglang.Engine(**self.cfg.engine_kwargs())

    async def shutdown(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None

    def stats(self) -> EngineStats:
        # SGLang owns its KV pool; only our own in-flight count is known here.
        return EngineStats(len(self._active), 0, 0, 0, 0)

    async def abort(self, request_id: str) -> None:
        """Idempotent: one abort_request per request."""
        if self._engine is not None and request_id in self._active \
                and request_id not in self._aborted:
            self._aborted.add(request_id)
            self._engine.tokenizer_manager.abort_request(request_id)

    def generate(self, request: GenerateRequest) -> DeltaStream:
        if self._engine is None:
            raise EngineError("sglang engine not started")
        if len(request.prompt_token_ids) >= self.max_context:
            raise EngineError(f"prompt has {len(request.prompt_token_ids)} tokens; context is {self.max_context}")
        return DeltaStream(request.request_id, self._stream(request), self.abort)

    def _sampling(self, request: GenerateRequest) -> dict:
        s = request.sampling
        params = {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k or -1,
                  "max_new_tokens": s.max_tokens, "stop": list(s.stop), "ignore_eos": s.ignore_eos,
                  "stop_token_ids": list(s.stop_token_ids)}
        if request.grammar is not None:
            tag = getattr(request.grammar, "structural_tag", None)
            if not tag:
                raise EngineError("sglang backend: the grammar carries no structural tag")
            params["structural_tag"] = tag
        return params

    async def _stream(self, request: GenerateRequest) -> AsyncIterator[Delta]:
        rid = request.request_id
        t0, t_first = time.perf_counter(), None
        timing = Timing(received_unix_ms=time.time() * 1000.0, accepted_at=t0,
                        prompt_tokens=len(request.prompt_token_ids))
        self._active.add(rid)
        try:
            gen = await self._engine.async_generate(
                input_ids=request.prompt_token_ids, sampling_params=self._sampling(request),
                stream=True, rid=rid)
            async for chunk in gen:
                meta = chunk.get("meta_info", {})
                ids = list(chunk.get("output_ids") or [])
                if ids and t_first is None:
                    t_first = time.perf_counter()
                fin = meta.get("finish_reason")
                delta = Delta(rid, ids, chunk.get("text", ""))
                if fin is not None:
                    self._fill_final(delta, fin, meta, timing, t0, t_first)
                yield delta
                if fin is not None:
                    return
        finally:  # a consumer that closes early has already aborted (DeltaStream.aclose)
            self._active.discard(rid)
            self._aborted.discard(rid)

    @staticmethod
    def _fill_final(delta: Delta, fin: dict, meta: dict, timing: Timing, t0: float, t_first: float | None) -> None:
        now = time.perf_counter()
        kind = fin.get("type") if isinstance(fin, dict) else str(fin)
        delta.finished = True
        delta.finish_reason = {"stop": "stop", "length": "length", "abort": "abort"}.get(kind, "error")
        if delta.finish_reason == "error":
            delta.error = str(fin)
        first = t_first or now
        timing.first_token_ms = (first - t0) * 1000.0
        timing.decode_ms = (now - first) * 1000.0
        timing.queue_ms = float(meta.get("queue_time") or 0.0) * 1000.0
        timing.cached_tokens = int(meta.get("cached_tokens") or 0)
        timing.prefill_tokens = timing.prompt_tokens - timing.cached_tokens
        timing.completion_tokens = int(meta.get("completion_tokens") or 0)
        delta.timing = timing
        steps = int(meta.get("spec_verify_ct") or 0)
        if steps:
            delta.spec = SpecStats(verify_steps=steps, committed_tokens=timing.completion_tokens,
                                   accepted_tokens=max(timing.completion_tokens - steps, 0))

