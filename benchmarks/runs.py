"""`turnspec bench engine`: the embedded engine vs HF transformers `generate`, same model, same
prompts, greedy, same run.

Measures (all engine-side, no sockets):
  * tok/s at concurrency 1 (prompts one after another) for turnspec and transformers, whose
    outputs are checked token-identical first (a speed ratio between different outputs would
    mean nothing);
  * tok/s with all prompts in flight at once (continuous batching) vs transformers run the
    way a user would (one generate per prompt) and batched (`generate` on a left-padded batch);
  * TTFT of turn 1 (cold) and of turn 2 with KV reuse (turn 1's prompt + reply from the
    prefix cache) vs without (cache cleared), behind a ~600-token system prompt with tools.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch

from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import Delta, GenerateRequest, SamplingParams, SpecStats

VOICE_PROMPTS = [
    "Hi, um, I'd like to book a table for four tonight around seven thirty.",
    "Can you tell me if you have any vegetarian options on the menu?",
    "uh actually, make that six people, not four.",
    "What time do you close on Sundays?",
    "Is there parking near the restaurant?",
    "I need to cancel my reservation for tomorrow, the name is Garcia.",
    "Do you take reservations for large parties, like twenty people?",
    "Could you repeat the address please?",
]
TURN2_PROMPTS = [
    "Great, and can I bring a birthday cake?",
    "Perfect. Is there a dress code?",
    "Okay, and do you have high chairs for kids?",
    "Thanks. Can you text me a confirmation?",
    "One more thing, is the patio open?",
]
SYSTEM = (
    "You are Bella, the voice assistant of Trattoria Bella Vista, an Italian restaurant at 42 "
    "Harbor Street. You answer phone calls. Speak in short, friendly sentences of at most two "
    "lines, because everything you say is read aloud by a text-to-speech engine. Never use "
    "lists, markdown, emojis or URLs. Opening hours: Monday to Thursday 5pm to 10pm, Friday and "
    "Saturday 5pm to 11pm, Sunday 4pm to 9pm. Parking: a public garage on Pier Road, two minutes "
    "away. Large parties over twelve people need a deposit. When the caller wants to book, "
    "change or cancel a reservation, or asks about availability, call the right tool. Confirm "
    "names, party sizes, dates and times back to the caller before booking."
)
TOOLS = [
    {"type": "function", "function": {"name": "check_availability", "description": "Check free tables for a party at a date and time.", "parameters": {"type": "object", "properties": {"date": {"type": "string", "description": "ISO date, e.g. 2026-11-29"}, "time": {"type": "string", "description": "24h time, e.g. 19:30"}, "party_size": {"type": "integer", "minimum": 1, "maximum": 30}}, "required": ["date", "time", "party_size"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "book_table", "description": "Book a table once the caller confirmed the details.", "parameters": {"type": "object", "properties": {"name": {"type": "string"}, "phone": {"type": "string"}, "date": {"type": "string"}, "time": {"type": "string"}, "party_size": {"type": "integer", "minimum": 1, "maximum": 30}, "notes": {"type": "string", "description": "allergies, occasions, seating wishes"}}, "required": ["name", "date", "time", "party_size"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "cancel_reservation", "description": "Cancel an existing reservation.", "parameters": {"type": "object", "properties": {"name": {"type": "string"}, "date": {"type": "string"}}, "required": ["name", "date"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "send_sms_confirmation", "description": "Text the caller a confirmation of their booking.", "parameters": {"type": "object", "properties": {"phone": {"type": "string"}, "reservation_id": {"type": "string"}}, "required": ["phone", "reservation_id"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "transfer_to_staff", "description": "Hand the call to a human host.", "parameters": {"type": "object", "properties": {"reason": {"type": "string", "enum": ["complaint", "large_event", "lost_item", "other"]}}, "required": ["reason"], "additionalProperties": False}}},
]


@dataclass(slots=True)
class RunResult:
    tokens: list[list[int]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    ttft_ms: list[float] = field(default_factory=list)
    cached_tokens: list[int] = field(default_factory=list)  # engine-reported prefix-cache hits
    prefill_tokens: list[int] = field(default_factory=list)  # engine-reported tokens prefilled
    spec: list[SpecStats | None] = field(default_factory=list)  # speculation stats, if any


def run_core(core: EngineCore, prompts: list[list[int]], max_new: int, concurrent: bool,
             spec_block_size: int | None = None) -> RunResult:
    """Generate on the core; per request: tokens, wall seconds from add to finish, TTFT."""
    res = RunResult()
    groups = [prompts] if concurrent else [[p] for p in prompts]
    for group in groups:
        t_add = time.perf_counter()
        ids = {}
        for i, p in enumerate(group):
            rid = f"b{time.perf_counter_ns()}-{i}"
            core.add(GenerateRequest(rid, p, SamplingParams(max_tokens=max_new),
                                     spec_block_size=spec_block_size))
            ids[rid] = i
        toks: dict[str, list[int]] = {r: [] for r in ids}
        first: dict[str, float] = {}
        done: dict[str, float] = {}
        finals: dict[str, Delta] = {}
        while core.has_work():
            for d in core.step():
                now = time.perf_counter()
                if d.token_ids and d.request_id not in first:
                    first[d.request_id] = now
                toks[d.request_id].extend(d.token_ids)
                if d.finished:
                    done[d.request_id] = now
                    finals[d.request_id] = d
        for r in ids:
            res.tokens.append(toks[r])
            res.seconds.append(done[r] - t_add)
            res.ttft_ms.append((first[r] - t_add) * 1000.0)
            res.cached_tokens.append(finals[r].timing.cached_tokens)
            res.prefill_tokens.append(finals[r].timing.prefill_tokens)
            res.spec.append(finals[r].spec)
    return res


def run_hf(hf, prompts: list[list[int]], max_new: int, eos: int) -> RunResult:
    res = RunResult()
    for p in prompts:
        x = torch.tensor([p])
        t0 = time.perf_counter()
        out = hf.generate(x, max_new_tokens=max_new, do_sample=False, eos_token_id=eos, pad_token_id=eos)
        res.seconds.append(time.perf_counter() - t0)
        res.tokens.append(out[0, len(p):].tolist())
    return res


def run_hf_batched(hf, prompts: list[list[int]], max_new: int, eos: int) -> float:
    """Seconds for one left-padded batched generate over all prompts."""
    n = max(len(p) for p in prompts)
    ids = torch.tensor([[eos] * (n - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (n - len(p)) + [1] * len(p) for p in prompts])
    t0 = time.perf_counter()
    hf.generate(ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False,
                eos_token_id=eos, pad_token_id=eos)
    return time.perf_counter() - t0


def hf_ttft_ms(hf, prompt: list[int]) -> float:
    t0 = time.perf_counter()
    hf.generate(torch.tensor([prompt]), max_new_tokens=1, do_sample=False)
    return (time.perf_counter() - t0) * 1000.0


def clear_prefix_cache(core: EngineCore) -> None:
    """Cold cache between measurements (only between requests: raises if any is in flight)."""
    core.blocks.clear()


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")
