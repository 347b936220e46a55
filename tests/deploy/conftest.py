"""The deploy assets' tests run a real server on the server tests' shared SmolLM2 engine."""

from tests.server.conftest import local_engine

__all__ = ["local_engine"]
