"""The DFlash drafter as the engine runs it: its config, its network and its on-disk folder
(the z-lab / SGLang layout). Training, data and evaluation live in `turnspec.speculator`.

The engine needs only `load_drafter` and the `DFlashDrafter` inference API
(`project_context`, `context_kv`, `forward_block`); see model.py.
"""

from turnspec.engine.drafter.config import DFlashConfig, build_target_layer_ids
from turnspec.engine.drafter.folder import (
    DEFAULT_DRAFTER_DIR,
    load_drafter,
    read_drafter,
    save_drafter,
)
from turnspec.engine.drafter.model import DFlashDrafter

__all__ = ["DEFAULT_DRAFTER_DIR", "DFlashConfig", "DFlashDrafter", "build_target_layer_ids",
           "load_drafter", "read_drafter", "save_drafter"]
