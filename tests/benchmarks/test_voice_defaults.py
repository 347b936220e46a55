"""The voice-defaults bench's offline replay (no model): the guard cuts a run where the engine
would (the detecting token, only where the grammar may end), never inside a tool call, never
on a run's stop token; the summary counts runaways, catches, false fires and budget cuts."""

from __future__ import annotations

from turnspec.benchmarks.voice_defaults import Run, guard_cut, summarize, sweep
from turnspec.engine.loop_guard import LoopGuard, first_loop

GUARD = LoopGuard(ngram=3, repeats=3)
LOOP = tuple([1, 2, 3] * 6)  # detected at the third copy of (1, 2, 3): token 9
ENDS = (7, 8, 9, 10, 0)  # ends on its own (0: the stop token)


def _run(tokens: tuple[int, ...], ended: bool, completed: tuple[bool, ...] | None = None,
         turn: str = "t") -> Run:
    return Run(turn, 0.0, 1.0, 0, tokens, completed or (True,) * len(tokens), ended, "")


def test_guard_cut_matches_the_engine_rule() -> None:
    assert guard_cut(_run(LOOP, ended=False), GUARD) == first_loop(list(LOOP), GUARD) == 9
    inside_call = (False,) * 11 + (True,) * 7  # the grammar cannot end before token 12
    assert guard_cut(_run(LOOP, ended=False, completed=inside_call), GUARD) == 12
    assert guard_cut(_run(ENDS, ended=True), GUARD) is None
    # a run whose last token repeats the n-gram but is its stop token ends on its own
    assert guard_cut(_run((1, 2, 3) * 2 + (1, 2, 3), ended=True), GUARD) is None


def test_summary_counts() -> None:
    runs = [_run(LOOP, ended=False, turn="dental-0"), _run(ENDS, ended=True),
            _run(tuple(range(20, 40)), ended=False)]  # a runaway that does not loop
    s = summarize(runs, GUARD, budgets=(8, 16))
    assert (s["runs"], s["ended_on_own"], s["runaway"], s["guard_caught"]) == (3, 1, 2, 1)
    assert s["guard_tokens_to_catch_mean"] == 9 and s["guard_fired_on_ended"] == []
    assert s["tokens_guard_on"]["max"] == 20  # 9 (cut), 5, 20
    assert s["budget_cut_share"] == {"8": 2 / 3, "16": 1 / 3}
    assert s["dental"] == {"runs": 1, "completed_guard_on": {"8": 0, "16": 1}}
    (row,) = sweep(runs, ((3, 3),))
    assert (row["runaways"], row["caught"], row["fired_on_ended"]) == (2, 1, 0)
