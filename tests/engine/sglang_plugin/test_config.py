"""The plugin's config from the environment SGLang's processes inherit, and arming it from the
process that starts SGLang."""

from __future__ import annotations

import pytest

from turnspec.engine.protocol import EngineError
from turnspec.engine.sglang_plugin import register
from turnspec.engine.sglang_plugin.arm import arm
from turnspec.engine.sglang_plugin.config import ENV_MODE, PluginConfig


def test_off_unless_armed_and_round_trips_through_the_environment() -> None:
    assert not PluginConfig.from_env({}).armed
    cfg = PluginConfig(mode="lookup", lookup_below=3.0, plan_at="verify")
    back = PluginConfig.from_env(cfg.to_env())
    assert back == cfg and back.armed and not back.sync_check
    checked = PluginConfig(mode="trees", learn_tokens=10, sync_check=True, width="served",
                           append_graphs=True)
    assert PluginConfig.from_env(checked.to_env()) == checked
    assert PluginConfig.from_env({ENV_MODE: "trees"}).width == "fixed"
    plain = PluginConfig(mode="trees", width="plain")  # every decode step plain (a check)
    assert PluginConfig.from_env(plain.to_env()) == plain
    assert [PluginConfig(mode="trees", width=w).step_widths(16) for w in ("fixed", "served",
                                                                          "plain")] == [
        (16,), (1, 16), (1,)]  # what the pace chooses among and the append graphs capture
    early = PluginConfig(mode="lookup", early_rows=4)
    assert PluginConfig.from_env(early.to_env()) == early
    opts = back.options()
    assert opts.branches == 1 and opts.lookup and opts.min_confidence == 0 and opts.lookup_below == 3.0


@pytest.mark.parametrize(("env", "message"), [
    ({ENV_MODE: "tree"}, "TURNSPEC_SGLANG_SPEC='tree': expected one of"),
    ({ENV_MODE: "lookup", "TURNSPEC_SPEC_LOOKUP_BELOW": "x"}, "expected a number"),
    ({ENV_MODE: "lookup", "TURNSPEC_SPEC_LOOKUP_BELOW": "-1"}, "lookup_below: expected >= 0"),
    ({ENV_MODE: "lookup", "TURNSPEC_SGLANG_PLAN_AT": "later"}, "TURNSPEC_SGLANG_PLAN_AT='later'"),
    ({ENV_MODE: "trees", "TURNSPEC_SGLANG_SYNC_CHECK": "yes"}, "SYNC_CHECK='yes': expected 0 or 1"),
    ({ENV_MODE: "trees", "TURNSPEC_SGLANG_WIDTH": "wide"}, "WIDTH='wide': expected one of"),
    ({ENV_MODE: "off", "TURNSPEC_SGLANG_WIDTH": "served"}, "expected TURNSPEC_SGLANG_SPEC=lookup"),
    ({ENV_MODE: "off", "TURNSPEC_SGLANG_WIDTH": "plain"}, "WIDTH=plain runs the plugin's plain"),
    ({ENV_MODE: "trees", "TURNSPEC_SGLANG_APPEND_GRAPHS": "on"}, "GRAPHS='on': expected 0 or 1"),
    ({ENV_MODE: "off", "TURNSPEC_SGLANG_APPEND_GRAPHS": "1"}, "expected TURNSPEC_SGLANG_SPEC=lookup"),
    ({ENV_MODE: "trees", "TURNSPEC_SGLANG_EARLY_FIRST_TOKEN": "-1"}, "'-1': expected a number"),
    ({ENV_MODE: "off", "TURNSPEC_SGLANG_EARLY_FIRST_TOKEN": "4"}, "FIRST_TOKEN=4 is the plugin's"),
])
def test_a_bad_environment_is_refused(env: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PluginConfig.from_env(env)


def test_unarmed_register_does_nothing(monkeypatch) -> None:
    """SGLang calls the entry point in every process; unarmed it must not even import sglang
    (which this CPU machine does not have)."""
    monkeypatch.delenv(ENV_MODE, raising=False)
    register()


def test_arming_exports_the_config_and_checks_the_entry_point() -> None:
    """This checkout is installed (`make setup`: pip install -e .), so its entry point is where
    SGLang looks; SGLANG_PLUGINS must not filter it out."""
    env: dict[str, str] = {}
    arm(PluginConfig(mode="lookup"), env, check_sglang=False)
    assert PluginConfig.from_env(env).mode == "lookup"
    off: dict[str, str] = {ENV_MODE: "lookup"}
    arm(PluginConfig(), off, check_sglang=False)
    assert off[ENV_MODE] == "off"   # the command line wins over a stale environment
    with pytest.raises(EngineError, match="SGLANG_PLUGINS='other' leaves out 'turnspec'"):
        arm(PluginConfig(mode="lookup"), {"SGLANG_PLUGINS": "other"}, check_sglang=False)
