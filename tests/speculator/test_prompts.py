"""Datagen prompts from the real workload generator, rendered with SmolLM2's chat template."""

from __future__ import annotations

import pytest

from turnspec.engine.chat import ChatTemplate
from turnspec.speculator.datagen import conversation_key
from turnspec.speculator.prompts import build_prompt_items


def test_tool_and_generic_prompts(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    items, skipped = build_prompt_items(chat.render_many, tool_conversations=3,
                                        heldout_conversations=2, generic=20,
                                        generic_heldout_frac=0.3, max_prompt_tokens=4096)
    assert skipped == 0 and len({it.id for it in items}) == len(items)
    by = {(it.source, it.split): [] for it in items}
    for it in items:
        by[(it.source, it.split)].append(it)
    assert set(by) == {("tools", "train"), ("tools", "heldout"), ("generic", "train"),
                       ("generic", "heldout")}
    assert len(by[("generic", "train")]) + len(by[("generic", "heldout")]) == 20
    tool = chat.tokenizer.decode(by[("tools", "heldout")][0].prompt_ids)
    assert "<tools>" in tool and tool.endswith("<|im_start|>assistant\n")
    generic = chat.tokenizer.decode(by[("generic", "train")][0].prompt_ids)
    assert "<tools>" not in generic and generic.endswith("<|im_start|>assistant\n")
    again, _ = build_prompt_items(chat.render_many, tool_conversations=3, heldout_conversations=2,
                                  generic=20, generic_heldout_frac=0.3, max_prompt_tokens=4096)
    assert again == items                                                # deterministic
    short, skipped = build_prompt_items(chat.render_many, tool_conversations=3,
                                        heldout_conversations=0, generic=0,
                                        max_prompt_tokens=1000)
    assert skipped > 0 and all(len(it.prompt_ids) <= 1000 for it in short)


def test_synthetic_prompts_come_after_the_rest(smollm2_dir):
    """Synthetic calls add their own source in both splits and leave every other item (and its
    shard) as it was, so packs of earlier sessions still rebuild."""
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    kw = dict(tool_conversations=2, heldout_conversations=1, generic=5, max_prompt_tokens=4096)
    base, _ = build_prompt_items(chat.render_many, **kw)
    more, _ = build_prompt_items(chat.render_many, synthetic_conversations=3, synthetic_heldout=2, **kw)
    assert more[: len(base)] == base
    extra = more[len(base):]
    assert {it.source for it in extra} == {"synthetic"}
    assert {it.split for it in extra} == {"train", "heldout"}
    assert all(it.id.startswith(f"synthetic-{it.split}-0-") for it in extra)
    text = chat.tokenizer.decode(extra[0].prompt_ids)
    assert "<tools>" in text and "end_call" in text and text.endswith("<|im_start|>assistant\n")


def test_shards_partition_the_prompts(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    kw = dict(tool_conversations=3, heldout_conversations=2, generic=10, max_prompt_tokens=4096,
              synthetic_conversations=2, synthetic_heldout=1)
    whole, _ = build_prompt_items(chat.render_many, **kw)
    shards = [build_prompt_items(chat.render_many, shard=i, num_shards=3, **kw)[0] for i in range(3)]
    assert all(shards) and sum(len(s) for s in shards) == len(whole)
    assert sorted(it.id for s in shards for it in s) == sorted(it.id for it in whole)
    assert {it.id: it for it in whole} == {it.id: it for s in shards for it in s}
    # whole calls per shard (a turn's prompt extends the previous turn's: shared prefill)
    convs = [{conversation_key(it.id) for it in s} for s in shards]
    assert not (convs[0] & convs[1] or convs[0] & convs[2] or convs[1] & convs[2])
    assert any(len([it for it in s if conversation_key(it.id) == c]) > 2
               for s, cs in zip(shards, convs, strict=True) for c in cs)
    # each shard builds only its own calls, yet the calls go round robin by first appearance in
    # the whole list, as when every shard built them all (earlier sessions' shards)
    order = list(dict.fromkeys(conversation_key(it.id) for it in whole))
    assert all(order.index(c) % 3 == i for i, cs in enumerate(convs) for c in cs)
    for bad in ((3, 3), (-1, 2), (0, 0)):
        with pytest.raises(ValueError, match="shard"):
            build_prompt_items(chat.render_many, shard=bad[0], num_shards=bad[1], **kw)


def test_committed_heldout_prompts_are_still_held_out(smollm2_dir):
    """The CPU bench's prompts (heldout.jsonl beside the default drafter) must stay held out
    under today's generators: same id -> same prompt tokens, split still "heldout". Guards
    against a workload edit (e.g. inserting generic templates: ids are positional) moving
    a bench prompt into the next drafter's training data."""
    from turnspec.engine.drafter.folder import DEFAULT_DRAFTER_DIR
    from turnspec.speculator.data import read_samples

    chat = ChatTemplate.from_model_dir(smollm2_dir)
    committed = read_samples(DEFAULT_DRAFTER_DIR / "heldout.jsonl")
    assert {s.source for s in committed} == {"tools", "generic"}
    # tool ids are "heldout-<datagen seed>-<conversation>:<turn>"; generic ids have no seed
    seeds = {int(s.id.split("-")[1]) for s in committed if s.source == "tools"}
    by_id = {}
    for seed in sorted(seeds):
        items, _ = build_prompt_items(chat.render_many, tool_conversations=0, heldout_conversations=200,
                                      max_prompt_tokens=4096, seed=seed)
        by_id.update({it.id: it for it in items})
    by_call = {it.id.split(":")[0]: it for it in by_id.values()}
    for s in committed:
        if s.source == "generic":
            it = by_id[s.id]
            assert it.split == "heldout" and it.prompt_ids == s.input_ids[: s.prompt_len], s.id
        else:
            # Since the agent lines are paraphrased, a call id regenerates the same
            # call (scenario, date, business, agent: drawn before any line) with other wording
            # and turns; its system message, and so its held-out scenario, must still match.
            it = by_call[s.id.split(":")[0]]
            system = s.input_ids.index(chat.tokenizer.convert_tokens_to_ids("<|im_end|>"))
            assert it.split == "heldout" and it.prompt_ids[:system] == s.input_ids[:system], s.id


def test_readback_prompts_ask_for_the_last_reply_again(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    kw = dict(tool_conversations=12, heldout_conversations=6, generic=0, max_prompt_tokens=4096)
    plain, _ = build_prompt_items(chat.render_many, **kw)
    items, _ = build_prompt_items(chat.render_many, readback_frac=1.0, **kw)
    reads = [it for it in items if it.source == "readback"]
    assert [it for it in items if it.source != "readback"] == plain    # the rest is unchanged
    assert {it.split for it in reads} == {"train", "heldout"}
    assert all(it.id.split(":")[1] == "readback" for it in reads)
    text = chat.tokenizer.decode(reads[0].prompt_ids)
    # the prompt ends on the caller's ask, right after an agent reply to a tool result
    body = text.rsplit("<|im_start|>user\n", 1)
    assert body[0].rstrip().endswith("<|im_end|>") and "</tool_response>" in body[0]
    assert body[1].endswith("<|im_end|>\n<|im_start|>assistant\n")
    half, _ = build_prompt_items(chat.render_many, readback_frac=0.5, **kw)
    n_half = sum(it.source == "readback" for it in half)
    assert 0 < n_half < len(reads)
    with pytest.raises(ValueError, match="readback_frac"):
        build_prompt_items(chat.render_many, readback_frac=1.5, **kw)


def test_dictation_prompts_end_on_random_details_to_read_back(smollm2_dir):
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    kw = dict(tool_conversations=12, heldout_conversations=6, generic=0, max_prompt_tokens=4096)
    plain, _ = build_prompt_items(chat.render_many, **kw)
    items, _ = build_prompt_items(chat.render_many, dictation_frac=1.0, **kw)
    dictated = [it for it in items if it.source == "dictation"]
    assert [it for it in items if it.source != "dictation"] == plain    # the rest is unchanged
    assert {it.split for it in dictated} == {"train", "heldout"}
    assert all(it.id.split(":")[1] == "dictation" for it in dictated)
    asks = [chat.tokenizer.decode(it.prompt_ids).rsplit("<|im_start|>user\n", 1)[1] for it in dictated]
    assert len(set(asks)) == len(asks)                   # random details: no two alike
    with pytest.raises(ValueError, match="dictation_frac"):
        build_prompt_items(chat.render_many, dictation_frac=-0.1, **kw)


def test_parts_partition_a_shard(smollm2_dir):
    """A datagen renders its shard in parts (answering part 0 while the rest render): the parts
    together are the shard's items, none empty, and one part is the shard as before."""
    chat = ChatTemplate.from_model_dir(smollm2_dir)
    kw = dict(tool_conversations=6, heldout_conversations=3, generic=12, max_prompt_tokens=4096,
              synthetic_conversations=4, synthetic_heldout=2, readback_frac=0.5, shard=1,
              num_shards=2)
    shard, skipped = build_prompt_items(chat.render_many, **kw)
    assert build_prompt_items(chat.render_many, **kw, part=0, num_parts=1) == (shard, skipped)
    parts = [build_prompt_items(chat.render_many, **kw, part=p, num_parts=3)[0] for p in range(3)]
    assert all(parts) and sum(len(p) for p in parts) == len(shard)
    assert sorted((it.id, it.prompt_ids) for p in parts for it in p) == \
        sorted((it.id, it.prompt_ids) for it in shard)
    # a call's turns and its readback stay in one part
    where = {conversation_key(it.id): p for p, items in enumerate(parts) for it in items}
    assert all(where[conversation_key(it.id)] == p for p, items in enumerate(parts) for it in items)
    for bad in ((3, 3), (0, 0), (-1, 2)):
        with pytest.raises(ValueError, match="part"):
            build_prompt_items(chat.render_many, **kw, part=bad[0], num_parts=bad[1])
