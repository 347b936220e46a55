"""The voice turns behind the server's defaults (docs/voice-defaults.md): the workload's
held-out turns as a client with tools and no tool_choice sends them, plus the dental-office
turn that looped out of the box ("uh hi, do you have anything for a cleaning on thursday",
second turn after a greeting, two tools) under several plausible system prompts.

The dental tools and conversation are also what tests/server/test_pipecat.py sends through
real pipecat, so the bench and the acceptance test speak about the same turn.
"""

from __future__ import annotations

from turnspec.benchmarks.tool_calls import select_turns
from turnspec.workloads import PromptTurn

DENTAL_TURN = "uh hi, do you have anything for a cleaning on thursday"
DENTAL_GREETING_USER = "hello?"
DENTAL_TOOLS = [
    {"type": "function", "function": {
        "name": "check_availability", "description": "Check open appointment slots for a day",
        "parameters": {"type": "object", "properties": {
            "day": {"type": "string", "description": "The day, e.g. thursday"},
            "visit": {"type": "string", "description": "Kind of visit, e.g. cleaning"}},
            "required": ["day"]}}},
    {"type": "function", "function": {
        "name": "book_appointment", "description": "Book an appointment",
        "parameters": {"type": "object", "properties": {
            "name": {"type": "string", "description": "Patient name"},
            "day": {"type": "string"}, "time": {"type": "string"}},
            "required": ["name", "day", "time"]}}},
]
# What a new user writes as a system prompt for a dental receptionist bot.
DENTAL_SYSTEMS = (
    "You are a helpful voice assistant.",
    "You are a dental clinic assistant.",
    "You are a helpful assistant for a dentist's office. You can check availability and book "
    "appointments.",
    "You are Sam, the receptionist at Smile Dental. Be brief.",
    "You are a voice assistant for a dental practice. Your output will be converted to audio so "
    "don't include special characters in your answers.",
    "You are a chatbot for a dental clinic.",
)
# The bot's first reply: one scripted, one the way SmolLM2 itself greets.
DENTAL_GREETINGS = (
    "Hello! Welcome to Smile Dental. How can I help you today?",
    "Hello! I'm here to help with your dental needs. What can I do for you today?",
)


def dental_turns() -> list[PromptTurn]:
    """The quoted second turn under every system prompt x greeting."""
    out = []
    for i, system in enumerate(DENTAL_SYSTEMS):
        for j, greeting in enumerate(DENTAL_GREETINGS):
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": DENTAL_GREETING_USER},
                        {"role": "assistant", "content": greeting},
                        {"role": "user", "content": DENTAL_TURN}]
            out.append(PromptTurn(f"dental-{i}-{j}", 3, "heldout", "dental", "dental.cleaning",
                                  messages, DENTAL_TOOLS, None))
    return out


def voice_turns(n_workload: int, seed: int = 0) -> list[PromptTurn]:
    """`n_workload` held-out workload turns (any kind: text, tool call, open) + the dental turns."""
    return select_turns(n_workload, seed=seed, split="heldout", kind=None) + dental_turns()
