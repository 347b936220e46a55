"""turnspec's speculator inside SGLang: a plugin a stock SGLang install loads.

Installed with turnspec (pyproject's entry point `sglang.srt.plugins: turnspec`), SGLang calls
`register` in every process it starts, its scheduler processes included, so the plugin works
under `turnspec serve --engine sglang` and under SGLang's own server alike. It is armed by the
environment (config.py: `TURNSPEC_SGLANG_SPEC=lookup`); unarmed it registers nothing.

Armed, it checks that SGLang is the version it was written against (checks.py) and hooks
SGLang's DFLASH worker (hooks.py) so that each greedy row verifies the block turnspec's
speculation core chooses (engine/spec/: the same proposers and planner as the embedded engine
and the offline τ replay; lookup_swap.py). On any other SGLang it registers one hook that
refuses to start the DFLASH worker, saying what differs: SGLang swallows an exception raised
here, so a refusal must come from inside the worker's start.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("turnspec.sglang_plugin")


def register() -> None:
    """SGLang's plugin entry point (called with no arguments in each of its processes)."""
    from turnspec.engine.sglang_plugin.config import PluginConfig

    config = PluginConfig.from_env(os.environ)
    if not config.armed:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    from turnspec.engine.sglang_plugin import checks, hooks
    from turnspec.engine.sglang_plugin.state import STATE

    failures = checks.failures()
    if failures:
        message = "; ".join(failures) + " (set TURNSPEC_SGLANG_SPEC=off to serve stock DFLASH)"
        HookRegistry.register(f"{checks.WORKER}.__init__", hooks.refusal(message),
                              HookType.AROUND)
        log.error("turnspec sglang plugin refuses this SGLang: %s", message)
        return
    STATE.configure(config)
    hooks.install(HookRegistry, HookType)
    log.info("turnspec sglang plugin armed: %s", config)
