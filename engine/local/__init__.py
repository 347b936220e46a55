"""The embedded PyTorch engine (default backend; CPU and single GPU)."""

from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.engine import LocalEngine

__all__ = ["LocalEngine", "LocalEngineConfig"]
