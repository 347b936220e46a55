"""Synthetic tool domains: a business, its tools and their results drawn at random per call.

The scripted scenarios (`domains/*.py`) give ~100 caller goals whose tool names, argument keys
and result keys recur in every call, so a drafter trained on the target's answers to them can
memorise those strings instead of learning to read them off the context. A drafter trained on
them alone did exactly that: on held-out turns where SmolLM2 replays an unseen tool's
`<tool_response>` (`{"status":"active","monthly_payment":90.5}`) it drafted train-set keys and
reached τ 2.45, against 4.50 on new text (docs/history/notes/drafter-run6-workload.md).

Here every call gets its own tools (`verb_noun` names from word lists, arguments of seven kinds,
results with random keys and values, made-up product and brand words), so whatever the target
copies from the context (a tool result, a tool call, a product name it repeats) cannot have been
seen in training: the only way to draft it is to copy. `turnspec speculator datagen
--synthetic-conversations` adds these calls' turns as source "synthetic" (and a held-out split
from a separate random stream, `--synthetic-heldout`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import timedelta

from turnspec.workloads import catalog
from turnspec.workloads.conversation import (
    AGENTS,
    FIRST_DAY,
    Conversation,
    checked_indices,
    close_call,
    system_prompt,
)
from turnspec.workloads.dialogue import Dialogue
from turnspec.workloads.spoken import Said


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NOUNS = _words("account address appointment badge batch bill booking bundle cabin card cart case certificate claim "
               "class client contract coupon course crate delivery deposit device document donation driver "
               "estimate event fee file fleet form gift grant guest invoice item job key kit label lease lesson "
               "license locker loan meal member membership meter order package pallet parcel pass patient payment "
               "permit pet plan plot policy prescription profile project quote rebate receipt record refill refund "
               "rental repair report request reservation return room route sample seat session shipment slot "
               "subscription survey table task ticket tour trip unit vehicle visit voucher wallet warranty "
               "workshop")
VERBS = _words("add approve assign book cancel change check confirm create extend find hold issue list lookup move "
               "open pause register release renew report reschedule reserve resume schedule send set split start "
               "stop submit track transfer update upgrade validate verify")
ADJECTIVES = _words("active annual backup base current daily default due estimated express final first last latest "
                    "linked local main monthly net next open pending primary prior remaining retail shared standard "
                    "total weekly")
STATUSES = _words("accepted active approved archived assigned booked cancelled cleared closed completed confirmed "
                  "delayed denied draft expired failed flagged frozen held issued late listed locked matched missing "
                  "on_hold open overdue paid paused pending posted processing queued ready received refunded rejected "
                  "renewed reserved scheduled sent shipped submitted suspended unpaid updated verified "
                  "waitlisted")
ROLES = ("the front desk", "customer support", "bookings", "the service desk", "member services",
         "the help line", "dispatch", "the records office", "orders and returns", "scheduling")
SUFFIXES = ("Labs", "Outfitters", "Health", "Logistics", "Rentals", "Works", "Co-op", "Studios", "Supply",
            "Services", "Group", "Clinic", "Storage", "Motors", "Travel", "Academy", "Pharmacy", "Energy")
_ONSETS = _words("b br c ch cl d dr f fl g gr h j k kl l m n p pl pr qu r s sh sl st t th tr v w z")
_VOWELS = _words("a e i o u a e o ai ea io ou y")
_CODAS = ("", "", "", "n", "r", "l", "s", "x", "m", "nd", "rt", "sk", "th")
ID_PATTERN = r"^[A-Z0-9]{6}$"
_DIGITS = re.compile(r"\^\\d\{(\d+)\}\$")
ASKS = ("I need to {verb} my {noun}", "can you {verb} a {noun} for me?", "I'd like to {verb} my {noun}",
        "I'm calling to {verb} my {noun}", "could you help me {verb} the {noun}?")
LINKS = ("okay, and one more thing.", "great. also,", "thanks. oh, and", "alright. next,")


def coined(rng: random.Random, syllables: int | None = None) -> str:
    """A made-up word ("brealox", "tromisk"): product, brand and drug names nobody has seen."""
    n = syllables or rng.choice((2, 2, 3))
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))


def _param(rng: random.Random, noun: str) -> tuple[str, dict]:
    """One argument: (key, JSON schema), the key built from the word lists; 7 kinds of value."""
    kind = rng.choice(("id", "digits", "count", "date", "choice", "name", "item"))
    other = rng.choice(NOUNS)
    if kind == "id":
        return f"{rng.choice((noun, other))}_{rng.choice(('id', 'code', 'reference'))}", catalog.string(
            f"Six-character {noun} code", pattern=ID_PATTERN)
    if kind == "digits":
        n = rng.choice((4, 5, 8, 9))
        return f"{rng.choice((noun, other))}_number", catalog.string(f"{n}-digit number",
                                                                   pattern=rf"^\d{{{n}}}$")
    if kind == "count":
        return rng.choice((f"{other}_count", "quantity", f"{other}s")), catalog.integer(
            f"How many {other}s", 1, 20)
    if kind == "date":
        return f"{rng.choice((*ADJECTIVES, noun))}_date", catalog.string(
            "Date, YYYY-MM-DD", pattern=catalog.DATE)
    if kind == "choice":
        options = sorted({coined(rng, 2) for _ in range(rng.randint(2, 4))})
        return f"{rng.choice((noun, other))}_{rng.choice(('type', 'tier', 'level', 'option'))}", catalog.enum(
            f"Which {noun} {rng.choice(('type', 'tier', 'level', 'option'))}", *options)
    if kind == "name":
        return rng.choice(("customer_name", f"{noun}_holder", "full_name")), catalog.string("Full name")
    return f"{rng.choice((noun, other))}_name", catalog.string(f"Name of the {other}")


def random_tool(rng: random.Random, taken: set[str]) -> tuple[dict, str]:
    """A function tool with 1-3 arguments and an unused `verb_noun` name; returns (tool, noun)."""
    while True:
        verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
        name = f"{verb}_{rng.choice(ADJECTIVES)}_{noun}" if rng.random() < 0.3 else f"{verb}_{noun}"
        if name not in taken:
            taken.add(name)
            break
    params: dict[str, dict] = {}
    for _ in range(rng.randint(1, 3)):
        key, schema = _param(rng, noun)
        params.setdefault(key, schema)
    return catalog.tool(name, f"{verb.title()} a {noun.replace('_', ' ')}.", **params), noun


def _argument(d: Dialogue, key: str, schema: dict) -> tuple[object, str]:
    """A value the caller gives for one argument: (tool value, how the caller says it)."""
    words = key.replace("_", " ")
    if "enum" in schema:
        choice = d.pick(*schema["enum"])
        return choice, f"the {words} is {choice}"
    if schema["type"] == "integer":
        n = d.count(schema.get("minimum", 1), min(schema.get("maximum", 9), 9))
        return n.value, f"{n.spoken} of them"
    pattern = schema.get("pattern", "")
    said: Said
    if pattern == ID_PATTERN:
        said = d.code(6)
    elif pattern == catalog.DATE:
        said = d.day(30)
    elif m := _DIGITS.fullmatch(pattern):
        said = d.digits(int(m.group(1)))
    elif key in ("customer_name", "full_name") or key.endswith("_holder"):
        said = d.person()
    else:
        word = coined(d.rng).title()
        said = Said(word, word)
    return said.value, f"the {words} is {said.spoken}"


def random_result(rng: random.Random) -> dict:
    """A tool result: a status and 1-4 fields with random keys and values of several kinds."""
    result: dict[str, object] = {"status": rng.choice(STATUSES)}
    for _ in range(rng.randint(1, 4)):
        key = f"{rng.choice(ADJECTIVES)}_{rng.choice(NOUNS)}" if rng.random() < 0.6 else rng.choice(NOUNS)
        kind = rng.randrange(6)
        if kind == 0:
            value: object = round(rng.randint(5, 900) + rng.choice((0, 0.25, 0.5, 0.99)), 2)
        elif kind == 1:
            value = rng.randint(1, 60)
        elif kind == 2:
            value = (FIRST_DAY + timedelta(days=rng.randint(0, 150))).isoformat()
        elif kind == 3:
            value = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(rng.randint(5, 8)))
        elif kind == 4:
            value = f"{coined(rng).title()} {rng.choice(NOUNS)}"
        else:
            value = rng.random() < 0.5
        result.setdefault(key, value)
    return result


def _reading(d: Dialogue, noun: str, result: dict) -> str:
    """The agent's spoken reply to a result: its status and up to two fields, read out."""
    parts = [f"Your {noun} is {str(result['status']).replace('_', ' ')}."]
    for key, value in list(result.items())[1:3]:
        words = key.replace("_", " ")
        if isinstance(value, bool):
            parts.append(f"{words.capitalize()}: {'yes' if value else 'no'}.")
        elif isinstance(value, float):
            parts.append(f"The {words} is {d.money_words(value)}.")
        elif isinstance(value, str) and len(value) == 10 and value[4] == "-":
            parts.append(f"The {words} is {d.date_words(value)}.")
        else:
            parts.append(f"The {words} is {value}.")
    return " ".join(parts)


def _script(d: Dialogue, tools: list[tuple[dict, str]]) -> None:
    for i, (spec, noun) in enumerate(d.rng.sample(tools, d.rng.randint(1, min(3, len(tools))))):
        fn = spec["function"]
        verb = fn["name"].split("_")[0]
        args, said = {}, []
        for key, schema in fn["parameters"]["properties"].items():
            args[key], words = _argument(d, key, schema)
            said.append(words)
        ask = d.pick(*ASKS).format(verb=verb, noun=noun)
        sep = " " if ask.endswith("?") else ". "
        d.user(f"{d.pick(*LINKS) + ' ' if i else ''}{ask}{sep}{', '.join(said)}")
        result = d.call(fn["name"], args, random_result(d.rng))
        d.say(_reading(d, noun, result))


def synthetic_conversations(n: int, seed: int = 0, split: str = "train",
                            indices: Sequence[int] | None = None) -> list[Conversation]:
    """n calls to made-up businesses with 2-4 random tools each, deterministic in (seed, split,
    index) like `generate_conversations`; split "train" and "heldout" draw separate streams.
    indices: build only those of the n (in the order given), e.g. one datagen shard's."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split: expected train or heldout, got {split!r}")
    return [_conversation(i, seed, split) for i in checked_indices(n, indices)]


def synthetic_id(seed: int, split: str, index: int) -> str:
    """The conversation id of synthetic call `index` (what its prompts' ids start with)."""
    return f"synthetic-{split}-{seed}-{index:06d}"


def _conversation(index: int, seed: int, split: str) -> Conversation:
    rng = random.Random(f"turnspec-synthetic:{seed}:{split}:{index}")
    taken: set[str] = set()
    tools = [random_tool(rng, taken) for _ in range(rng.randint(2, 4))]
    business = f"{coined(rng).title()} {rng.choice(SUFFIXES)}"
    dom = catalog.Domain("synthetic", (business,), rng.choice(ROLES), tuple(t for t, _ in tools))
    today = FIRST_DAY + timedelta(days=rng.randrange(120))
    d = Dialogue(rng, dom, today, business, rng.choice(AGENTS))
    d.messages.append({"role": "system", "content": system_prompt(d.agent, business, dom.role, today)})
    if rng.random() < 0.4:
        d.say(f"Thanks for calling {business}, this is {d.agent}. How can I help?")
    _script(d, tools)
    close_call(d)
    return Conversation(synthetic_id(seed, split, index), split, dom.name,
                        f"synthetic.{tools[0][0]['function']['name']}", dom.all_tools, d.messages)
