"""The early first token on the CPU, through the hook as SGLang's overlap scheduler calls it:
a small decode step right after a prefill is not overlapped with it (the prefill's first token
goes out first); after a verify (which SGLang also counts as an extend), above the row limit,
for a prefill, and with the option off, SGLang's own answer stands."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from turnspec.engine.sglang_plugin import first_token
from turnspec.engine.sglang_plugin.config import PluginConfig
from turnspec.engine.sglang_plugin.state import STATE

MODES = ("EXTEND", "DECODE", "TARGET_VERIFY", "MIXED")


def batch(mode: str, rows: int = 1) -> SimpleNamespace:
    """A ScheduleBatch as far as the hook reads it: ForwardMode's two predicates, as SGLang
    0.5.17 defines them (a verify is an extend, not one without speculation)."""
    assert mode in MODES
    fm = SimpleNamespace(is_decode=lambda: mode == "DECODE",
                         is_extend_without_speculative=lambda: mode in ("EXTEND", "MIXED"))
    return SimpleNamespace(forward_mode=fm, reqs=[object()] * rows)


@pytest.mark.parametrize(("last", "now", "rows", "early"), [
    ("EXTEND", "DECODE", 1, True),           # a new request's first decode step, one stream
    ("EXTEND", "DECODE", 4, True),           # at the limit
    ("EXTEND", "DECODE", 5, False),          # above it: SGLang's overlap
    ("MIXED", "DECODE", 2, True),            # a chunked prefill mixed with decode rows
    ("TARGET_VERIFY", "DECODE", 1, False),   # a decode after a decode (DFLASH's verify mode)
    ("EXTEND", "EXTEND", 1, False),          # two prefills: SGLang's own rule decides
    (None, "DECODE", 1, False),              # nothing ran before
])
def test_a_small_decode_after_a_prefill_waits_for_the_first_token(last, now, rows, early) -> None:
    STATE.configure(PluginConfig(mode="trees", early_rows=4))
    STATE.stats.clear()
    sglang_says = []

    def original(scheduler, b, last_batch):
        sglang_says.append((b, last_batch))
        return False

    b, lb = batch(now, rows), (batch(last) if last else None)
    assert first_token.around_disable_overlap(original, object(), b, lb) is early
    assert sglang_says == [(b, lb)]                    # SGLang's reasons are always asked
    assert STATE.stats["early_first_tokens"] == int(early)


def test_sglangs_own_reasons_stand_and_nothing_changes_with_the_option_off() -> None:
    STATE.configure(PluginConfig(mode="trees", early_rows=4))
    assert first_token.around_disable_overlap(lambda *a: True, None, batch("DECODE", 9),
                                              batch("TARGET_VERIFY"))
    STATE.configure(PluginConfig(mode="trees"))
    assert not first_token.around_disable_overlap(lambda *a: False, None, batch("DECODE"),
                                                  batch("EXTEND"))
