"""Datagen prompts: voice/tool-calling turns from the workload generator, plus generic chat.

Tool turns come from `workloads` (one prompt per assistant message: the
conversation so far, tools offered); its train / held-out split is by scenario, so held-out tau
measures unseen call types. Generic prompts (no tools) are split by a stable hash of their id.
Rendering is injected (`render([(messages, tools), ...]) -> ids per prompt`, the target's chat
template, e.g. `ChatTemplate.render_many`) so this module needs no engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from turnspec.speculator.datagen import PromptItem, conversation_key
from turnspec.tools_grammar.schema import ToolSpec, parse_tools
from turnspec.workloads import (
    conversation_id_of,
    dictation_conversations,
    generate_conversations,
    generic_prompts,
    readback_conversations,
    stable_unit,
    turns_for_prompting,
)
from turnspec.workloads import (
    synthetic_conversations as synthetic_conversations_of,
)
from turnspec.workloads.catalog import LATEST_WORKLOAD
from turnspec.workloads.synthetic import synthetic_id

RenderFn = Callable[[Sequence[tuple[list[dict], list[ToolSpec] | None]]], list[list[int]]]
RENDER_CHUNK = 1024     # prompts per render call (one tokenizer batch)
Candidate = tuple[str, str, str, list[dict], list]  # (id, split, source, messages, tools JSON)


def build_prompt_items(render: RenderFn, *, tool_conversations: int,
                       heldout_conversations: int, generic: int | None = None,
                       generic_heldout_frac: float = 0.2, max_prompt_tokens: int = 2048,
                       seed: int = 0, shard: int = 0, num_shards: int = 1,
                       part: int = 0, num_parts: int = 1,
                       readback_frac: float = 0.0, dictation_frac: float = 0.0,
                       synthetic_conversations: int = 0, synthetic_heldout: int = 0,
                       workload: int = LATEST_WORKLOAD,
                       keep: Callable[[str], bool] | None = None) -> tuple[list[PromptItem], int]:
    """Prompt items for datagen and the number skipped for exceeding max_prompt_tokens.

    tool_conversations / heldout_conversations: conversations drawn from the train / held-out
    scenarios (each gives ~4-5 prompts); generic: how many generic prompts (None: all).
    shard / num_shards: keep every num_shards-th conversation (by first appearance; a
    readback keeps its call's) starting at shard, rendering only those, so N datagen
    processes on one GPU split the work without overlap and each holds whole calls: turn k+1's
    prompt extends turn k's, and only a shard that answers both reuses that prefill. (Sharding
    by prompt, the earlier way, cached 20-23% of prompt tokens per shard on the H200.)
    part / num_parts: within the shard, keep every num_parts-th of its conversations starting
    at part (the same round robin, one level down), so a datagen can answer part 0 while it
    renders the rest; the parts of a shard partition its items.
    readback_frac: that share of each split's conversations also gives one readback prompt
    (source "readback": the caller asks to hear the agent's last reply again, an in-context
    copy); 0 leaves the items exactly as before.
    dictation_frac: likewise, a caller dictating random details and asking for them back
    (source "dictation": copies that cannot be memorised); 0 leaves the items as before.
    synthetic_conversations / synthetic_heldout: calls to made-up businesses whose tools and
    results are random per call (source "synthetic": whatever the target copies from them
    cannot be memorised), from the train / held-out random streams; 0 adds none.
    workload: the workload version whose train goals the tool conversations draw from
    (catalog.WORKLOADS; the held-out ones are the same in every version).
    keep: render only the prompts whose id it accepts (rebuilding packed responses).
    Each shard builds only its own conversations (when every shard built all of them: 50-59 s
    each on the H200 host beside six rebuilds; dev box 12.0 -> 10.0 s;
    docs/history/notes/run17-fast-load.md). That assumes every
    conversation gives at least one prompt, so that its first appearance comes in index order;
    a built one that gives none raises.
    """
    if not 0.0 <= generic_heldout_frac < 1.0:
        raise ValueError(f"generic_heldout_frac: expected [0, 1), got {generic_heldout_frac}")
    for name, frac in (("readback_frac", readback_frac), ("dictation_frac", dictation_frac)):
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"{name}: expected [0, 1], got {frac}")
    ours = RoundRobin(shard, num_shards, part, num_parts)
    wanted = (c for c in prompt_candidates(
        ours, seed=seed, workload=workload,
        tools=(("train", tool_conversations), ("heldout", heldout_conversations)),
        copies=(("readback", readback_conversations, readback_frac),
                ("dictation", dictation_conversations, dictation_frac)),
        generic=generic, generic_heldout_frac=generic_heldout_frac,
        synthetic=(("train", synthetic_conversations), ("heldout", synthetic_heldout)))
        if ours.takes(conversation_key(c[0])) and (keep is None or keep(c[0])))
    return render_items(render, wanted, max_prompt_tokens)


class RoundRobin:
    """Which conversations a shard's part builds: each conversation's slot in a round robin
    by first appearance; the shard is slot % num_shards and the part within it slot //
    num_shards (the shards as with one part)."""

    def __init__(self, shard: int, num_shards: int, part: int, num_parts: int) -> None:
        if num_shards < 1 or not 0 <= shard < num_shards:
            raise ValueError(f"shard {shard} of {num_shards}: expected 0 <= shard < num_shards")
        if num_parts < 1 or not 0 <= part < num_parts:
            raise ValueError(f"part {part} of {num_parts}: expected 0 <= part < num_parts")
        self.slots, self.ours = num_shards * num_parts, shard + part * num_shards
        self.slot_of: dict[str, int] = {}

    def takes(self, conv: str) -> bool:
        return self.slot_of.setdefault(conv, len(self.slot_of) % self.slots) == self.ours

    def mine(self, n: int, conv_id: Callable[[int], str]) -> list[int]:
        """The indices of the n conversations this shard's part builds (every one takes its
        turn)."""
        return [i for i in range(n) if self.takes(conv_id(i))]


def prompt_candidates(ours: RoundRobin, *, seed: int, workload: int,
               tools: Sequence[tuple[str, int]], copies: Sequence[tuple[str, Callable, float]],
               generic: int | None, generic_heldout_frac: float,
               synthetic: Sequence[tuple[str, int]]) -> Iterator[Candidate]:
    """(id, split, source, messages, tools) of the prompts `ours` builds (build_prompt_items'
    arguments), in the order that fixes shards: the tool conversations of each split with
    their readback and dictation copies, the generic prompts, the synthetic calls."""
    for split, n in tools:
        convs = generate_conversations(
            n, seed=seed, split=split, workload=workload,
            indices=ours.mine(n, lambda i, split=split: conversation_id_of(seed, split, i)))
        turns = [(t, "tools") for t in turns_for_prompting(convs)]
        silent = {c.id for c in convs} - {t.conversation_id for t, _ in turns}
        if silent:
            raise RuntimeError(f"conversations {sorted(silent)[:3]} gave no prompt, so the "
                               "shards by index no longer match the shards by first "
                               "appearance: build_prompt_items needs a change")
        for source, extend, frac in copies:
            turns += [(t, source) for t in turns_for_prompting(extend(convs, frac, seed=seed))
                      if t.expected is None]
        for turn, source in turns:
            yield f"{turn.conversation_id}:{turn.turn}", split, source, turn.messages, turn.tools
    for conv in generic_prompts(generic):
        split = "heldout" if stable_unit(conv.id) < generic_heldout_frac else "train"
        yield conv.id, split, "generic", conv.messages, []
    for split, n in synthetic:  # synthetic calls likewise: new conversations in index order
        own = ours.mine(n, lambda i, split=split: synthetic_id(seed, split, i))
        for turn in turns_for_prompting(synthetic_conversations_of(n, seed=seed, split=split,
                                                                    indices=own)):
            yield f"{turn.conversation_id}:{turn.turn}", split, "synthetic", turn.messages, turn.tools


def render_items(render: RenderFn, candidates: Iterable[Candidate],
                 max_prompt_tokens: int) -> tuple[list[PromptItem], int]:
    """Render (id, split, source, messages, tools) candidates in chunks of RENDER_CHUNK into
    prompt items; returns them and the number skipped for exceeding max_prompt_tokens."""
    items: list[PromptItem] = []
    skipped = 0
    tool_sets: dict[str, list[ToolSpec]] = {}  # a call's turns share its tools: parse them once
    pending: list[tuple[str, str, str, list[dict], list[ToolSpec]]] = []

    def flush() -> None:
        nonlocal skipped
        rendered = render([(messages, tools or None) for *_, messages, tools in pending])
        for (item_id, split, source, _, tools), ids in zip(pending, rendered, strict=True):
            if len(ids) > max_prompt_tokens:
                skipped += 1
            else:
                items.append(PromptItem(item_id, split, source, tuple(ids), tuple(tools)))
        pending.clear()

    for item_id, split, source, messages, tool_json in candidates:
        key = repr(tool_json)
        tools = tool_sets.get(key)
        if tools is None:
            tools = tool_sets[key] = parse_tools(tool_json)
        pending.append((item_id, split, source, messages, tools))
        if len(pending) >= RENDER_CHUNK:
            flush()
    flush()
    return items, skipped
