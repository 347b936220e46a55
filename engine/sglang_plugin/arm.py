"""Arming the plugin from the process that starts SGLang (`turnspec serve --engine sglang`):
refuse now, with what to do, what SGLang's processes would refuse later (or silently skip),
then export the config their environment carries to them."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from importlib.metadata import entry_points

from turnspec.engine.protocol import EngineError
from turnspec.engine.sglang_plugin.config import PluginConfig

GROUP = "sglang.srt.plugins"
NAME = "turnspec"


def arm(config: PluginConfig, environ: MutableMapping[str, str] | None = None,
        check_sglang: bool = True) -> None:
    """Export `config` into `environ` (os.environ) for SGLang's processes. Armed, the plugin
    must be installed where SGLang looks (an entry point of an installed distribution), not
    filtered out by SGLANG_PLUGINS, and the installed SGLang must be the one it was written
    against (`check_sglang`)."""
    env = os.environ if environ is None else environ
    if config.armed:
        names = {ep.name for ep in entry_points(group=GROUP)}
        if NAME not in names:
            raise EngineError(f"the turnspec SGLang plugin is not installed where SGLang looks "
                              f"(no entry point {NAME!r} in group {GROUP!r}); expected turnspec "
                              "installed as a package (`pip install -e .`), or --sglang-spec off")
        allowed = env.get("SGLANG_PLUGINS", "")
        if allowed and NAME not in [a.strip() for a in allowed.split(",")]:
            raise EngineError(f"SGLANG_PLUGINS={allowed!r} leaves out {NAME!r}; expected it in "
                              "the list, or SGLANG_PLUGINS unset")
        if check_sglang:
            from turnspec.engine.sglang_plugin.checks import failures

            bad = failures()
            if bad:
                raise EngineError("--sglang-spec " + config.mode + ": " + "; ".join(bad))
    env.update(config.to_env())
