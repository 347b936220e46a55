"""What answers datagen's prompts: the embedded local engine (`--engine local`, the default) or
SGLang's in-process engine (`--engine sglang`, speculator/datagen_sglang.py), behind one small
interface, so the prompts, the plan, the records and meta.json are the same code for both.

Each engine's flags are checked before anything renders or loads: a flag of the other engine
is an error (it would silently do nothing), and `--engine sglang` without sglang installed
stops with the same hint as `turnspec serve --engine sglang`.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local import LocalEngine
    from turnspec.speculator.datagen import PromptItem
    from turnspec.tools_grammar.grammar import ToolGrammarMatcher

ENGINES = ("local", "sglang")
# datagen's own flags that only the local engine reads (the engine flags are add_engine_args')
LOCAL_DATAGEN_FLAGS = ("feed", "admit_min_free", "tool_grammar")


class DatagenTarget(Protocol):
    """The target model answering datagen's prompts greedily."""

    name: str                 # "local" | "sglang": meta.json's and the summary's `engine`
    model_dir: str
    batch_size: int           # prompts per planned batch when --batch-size is not given
    counts: dict[str, int]    # prompt_tokens, cached_prompt_tokens (prefix-cache hits)

    def load(self, workload: int) -> None:
        """Load the engine (the prompts render meanwhile in a child process)."""

    def meta(self) -> dict[str, Any]:
        """The engine's keys of meta.json (the same keys for every engine; None where one
        does not apply)."""

    def register(self, items: list[PromptItem]) -> None:
        """Called with each part's prompts before they are answered (--tool-grammar)."""

    def feed(self, max_new_tokens: int, batch_size: int) -> dict[str, Any]:
        """generate_dataset's `answer=` or `stream=` (greedy, stopping on the model's EOS);
        batch_size is the run's (the plan's batches; SGLang's prompts per generate call)."""

    def close(self) -> None:
        """Free the engine (SGLang's scheduler processes); safe before load."""


def make_target(args: argparse.Namespace) -> DatagenTarget:
    """The target --engine names, its flags checked; nothing loaded yet."""
    check_engine_flags(args)
    if args.engine == "sglang":
        from turnspec.speculator.datagen_sglang import SGLangTarget

        return SGLangTarget(args)
    return LocalTarget(args)


def check_engine_flags(args: argparse.Namespace) -> None:
    """SystemExit for a flag the chosen engine does not read, or for sglang not installed."""
    from turnspec.engine.sglang_args import other_engine_flags

    if args.engine not in ENGINES:
        raise SystemExit(f"--engine {args.engine!r}: expected one of {ENGINES}")
    if args.engine == "sglang":
        from turnspec.engine.sglang import INSTALL_HINT, sglang_available

        if not sglang_available():   # before a prompt renders or a model converts
            raise SystemExit(f"datagen: {INSTALL_HINT}")
    wrong = other_engine_flags(args, "datagen", LOCAL_DATAGEN_FLAGS)
    if wrong:
        raise SystemExit(wrong)


class LocalTarget:
    """The embedded local engine, fed one continuous stream (--feed stream, the default) or one
    `generate_batch` per planned batch (--feed batches)."""

    name = "local"
    batch_size = 256

    def __init__(self, args: argparse.Namespace) -> None:
        from turnspec.engine.local.args import engine_config_from_args

        cfg = engine_config_from_args(args)
        self.feed_kind = args.feed or "stream"
        if self.feed_kind == "stream":
            default = max(1, cfg.max_batch // 8)  # an explicit 0 reaches the config's check
            cfg = dataclasses.replace(cfg, admit_min_free=default if args.admit_min_free is None
                                      else args.admit_min_free)
        elif args.admit_min_free is not None:
            raise SystemExit("--admit-min-free applies to --feed stream only")
        self.cfg, self.model_dir, self.speculator = cfg, cfg.model_dir, args.speculator
        self.counts: dict[str, int] = {"prompt_tokens": 0, "cached_prompt_tokens": 0}
        self._engine: LocalEngine | None = None
        # --tool-grammar auto: a prompt with tools is answered under the server's tool_choice
        # "auto" grammar. The tools of a prompt are looked up by its ids (they are rendered into
        # it, so equal ids mean equal tools); register() adds each part's before it is answered.
        self.tool_grammar: str | None = args.tool_grammar
        self._tools: dict[tuple[int, ...], tuple] = {}

    def register(self, items: list[PromptItem]) -> None:
        """Remember the tools of these PromptItems (a no-op without --tool-grammar)."""
        if self.tool_grammar:
            self._tools.update((it.prompt_ids, it.tools) for it in items if it.tools)

    def _grammar(self, prompt: list[int]) -> ToolGrammarMatcher | None:
        tools = self._tools.get(tuple(prompt))
        if not tools:
            return None
        from turnspec.tools_grammar.schema import ToolChoice

        chat = self._engine.chat
        return chat.grammar_compiler.matcher(list(tools), ToolChoice("auto"), chat.tool_format)

    def load(self, workload: int) -> None:
        from turnspec.engine.chat import ChatTemplate
        from turnspec.engine.local import LocalEngine

        engine = LocalEngine(self.cfg)
        engine.load()
        check_same_render(ChatTemplate.from_model_dir(self.model_dir), engine.chat, workload)
        self._engine = engine

    def meta(self) -> dict[str, Any]:
        import torch

        cfg = self.cfg
        return {"max_batch": cfg.max_batch, "max_prefill_tokens": cfg.max_prefill_tokens,
                "speculator": self.speculator, "feed": self.feed_kind,
                "admit_min_free": cfg.admit_min_free, "threads": torch.get_num_threads(),
                "tool_grammar": self.tool_grammar or "off"}

    def feed(self, max_new_tokens: int, batch_size: int) -> dict[str, Any]:
        from turnspec.engine.protocol import SamplingParams

        engine, counts = self._engine, self.counts
        assert engine is not None, "load() first"
        sampling = SamplingParams(temperature=0.0, max_tokens=max_new_tokens)
        grammar = self._grammar if self.tool_grammar else None
        if self.feed_kind == "stream":
            return {"answer": None, "stream": lambda ps: engine.generate_stream(
                ps, sampling, counts=counts, grammar=grammar)}
        return {"answer": lambda ps: engine.generate_batch(ps, sampling, counts=counts,
                                                           grammar=grammar)}

    def sample(self, prompts: list[list[int]], temperature: float, top_p: float,
               max_new_tokens: int) -> list[list[int]]:
        """Completions of `prompts` at that temperature (0: greedy), each through its stop id
        (kept) or max_new_tokens; speculator/magpie.py's SampleFn."""
        from turnspec.engine.protocol import SamplingParams

        assert self._engine is not None, "load() first"
        return self._engine.generate_batch(prompts, SamplingParams(
            temperature=temperature, top_p=top_p, max_tokens=max_new_tokens))

    def close(self) -> None:
        pass


def check_same_render(ours: ChatTemplate, engines: ChatTemplate, workload: int) -> None:
    """The prompts were rendered with the model folder's template; the engine's must agree (one
    workload turn with tools, rendered by both)."""
    from turnspec.tools_grammar.schema import parse_tools
    from turnspec.workloads import generate_conversations, turns_for_prompting

    turn = next(turns_for_prompting(generate_conversations(1, seed=0, split="train",
                                                           workload=workload)))
    probe = [(turn.messages, parse_tools(turn.tools))]
    if ours.render_many(probe) != engines.render_many(probe):
        raise SystemExit("datagen: a prompt renders differently through the engine's chat "
                         "template than through the model folder's; expected the same tokenizer "
                         "in both")
