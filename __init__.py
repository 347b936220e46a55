"""turnspec: the fastest open LLM backend for voice agents."""

__version__ = "0.1.0"
