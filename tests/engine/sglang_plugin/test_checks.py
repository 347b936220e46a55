"""The SGLang the plugin was written against: another version, or a hooked function with other
parameters, is named in the refusal."""

from __future__ import annotations

import importlib.util

from turnspec.engine.sglang_plugin import checks, draft_head


def test_another_version_is_refused_first() -> None:
    assert checks.failures(version="0.5.18") == [
        "sglang 0.5.18 is installed; expected 0.5.17"]


def test_parameters_reads_positional_and_keyword_only_names() -> None:
    def f(self, batch, on_publish=None, *, rid, natural_stop=False):
        pass

    assert checks.parameters(f) == (("self", "batch", "on_publish"), ("rid", "natural_stop"))


def test_a_missing_target_is_reported_not_raised() -> None:
    """Without sglang (the CPU machines) every pinned target is reported as not found; with
    the SGLang the plugin pins (the GPU recipe's), nothing is."""
    out = checks.failures(version=checks.SGLANG_VERSION)
    if importlib.util.find_spec("sglang") is not None:
        assert out == []
        return
    assert len(out) == len(checks.PINNED) + len(checks.FIELDS)
    assert all("not found" in line or "not a dataclass" in line for line in out)
    assert checks.resolve("turnspec.engine.sglang_plugin.checks.PINNED") is checks.PINNED


class DraftSampler:  # SGLang's _DflashDraftSampler's constructor, as pinned
    def __init__(self, *, weight, block_size, num_org, org_vocab_start, max_bs, tp_group):
        pass


def test_a_second_engine_reads_the_pins_through_the_plugins_replacement() -> None:
    """SGLang applies a process's plugin hooks once, so a second Engine in the process (the
    trees CUDA test module's second test) checks its pins with the drafter's head already
    replaced by the plugin's: they are read from the class it replaced, not from its own
    `__init__(**kwargs)`."""
    pinned = checks.PINNED[f"{checks.SAMPLER}.__init__"]
    Replaced = globals()["Replaced"] = draft_head.sampler_class(DraftSampler)  # resolvable by path
    assert checks.parameters(Replaced.__init__) == (("self",), ())  # what the check once read
    at = f"{__name__}.Replaced.__init__"
    assert checks.parameters(checks.resolve(at)) == pinned
    # a subclass that is not the plugin's is read as it is
    globals()["Plain"] = type("Plain", (DraftSampler,), {"__init__": lambda self, **kw: None})
    assert checks.parameters(checks.resolve(f"{__name__}.Plain.__init__")) == (("self",), ())
