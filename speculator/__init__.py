"""turnspec.speculator: the DFlash drafter, its training data, training, tau evaluation, export.

The engine needs only `load_drafter` and the `DFlashDrafter` inference API
(`project_context`, `context_kv`, `forward_block`); see model.py.
"""

from turnspec.speculator.config import DFlashConfig, build_target_layer_ids
from turnspec.speculator.export import load_drafter, read_drafter, save_drafter
from turnspec.speculator.model import DFlashDrafter

__all__ = ["DFlashConfig", "DFlashDrafter", "build_target_layer_ids", "load_drafter",
           "read_drafter", "save_drafter"]
