"""Synthetic voice-agent workload: seeded tool-calling phone conversations across 8 domains,
split by scenario into train / held-out, plus generic chat prompts. See README.md."""

from __future__ import annotations

from turnspec.workloads.conversation import (
    Conversation,
    PromptTurn,
    conversation_id_of,
    export_jsonl,
    generate_conversations,
    load_jsonl,
    scenarios_for,
    stable_unit,
    turns_for_prompting,
)
from turnspec.workloads.dictation import dictation_conversations
from turnspec.workloads.generic import generic_prompts
from turnspec.workloads.readback import readback_conversations
from turnspec.workloads.synthetic import synthetic_conversations

__all__ = [
    "Conversation", "PromptTurn", "conversation_id_of", "dictation_conversations", "export_jsonl", "generate_conversations",
    "generic_prompts",
    "load_jsonl", "readback_conversations", "scenarios_for", "stable_unit", "synthetic_conversations",
    "turns_for_prompting",
]
