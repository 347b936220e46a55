"""The width rule: blocks a greedy row verifies, by measured verify cost against measured τ."""

from __future__ import annotations

import pytest

from turnspec.engine.spec.width import Curve, Pace, WidthRule

TAU = Curve.of([(1, 3.70), (3, 5.65), (8, 6.27), (16, 6.55)])  # replay-shaped: gains flatten


def test_a_curve_interpolates_and_extends_its_end_segments() -> None:
    c = Curve.of([(4, 2.0), (2, 1.0)])
    assert c.xs == (2.0, 4.0)
    assert c.at(3) == pytest.approx(1.5)
    assert c.at(8) == pytest.approx(4.0)      # beyond the last point: the last segment's slope
    assert c.at(1) == pytest.approx(0.5)
    assert Curve.of([(16, 7.0)]).at(1000) == 7.0


@pytest.mark.parametrize(("xs", "ys", "message"), [
    ((), (), "at least one"),
    ((1, 2), (1.0,), "as many ys as xs"),
    ((2, 2), (1.0, 1.0), "strictly increasing"),
    ((0,), (1.0,), "positive and strictly increasing"),
    ((1,), (0.0,), "finite and positive"),
    ((1,), (float("nan"),), "finite and positive"),
])
def test_bad_curves_are_refused(xs, ys, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Curve(xs, ys)


def test_flat_cost_takes_the_widest_tree_and_linear_cost_one_block() -> None:
    flat = WidthRule(TAU, Curve.of([(1, 1.0), (10_000, 1.0001)]))
    linear = WidthRule(TAU, Curve.of([(1, 1.0), (2, 2.0)]))  # every token costs the same
    assert flat.branches(1, 0, block=16, most=16) == 16
    assert linear.branches(1, 0, block=16, most=16) == 1


def test_the_width_shrinks_as_the_batch_fills_the_device() -> None:
    # one pass costs the same up to 256 tokens, then grows with every token
    rule = WidthRule(TAU, Curve.of([(16, 1.0), (256, 1.0), (8192, 32.0)]))
    widths = [rule.branches(g, 0, block=16, most=16) for g in (1, 2, 4, 8, 16, 32)]
    assert widths == sorted(widths, reverse=True)
    assert widths[0] == 16 and widths[-1] == 1
    # the picked width is the rate's maximum: no other width commits more tokens a second
    def rate(g: int, b: int) -> float:
        return g * TAU.at(b) / rule.cost.at(g * b * 16)
    for g, b in zip((1, 2, 4, 8, 16, 32), widths, strict=True):
        assert all(rate(g, b) >= rate(g, other) for other in range(1, 17))


def test_rows_that_verify_one_block_count_in_the_cost() -> None:
    rule = WidthRule(TAU, Curve.of([(16, 1.0), (256, 1.0), (8192, 32.0)]))
    alone = rule.branches(1, 0, block=16, most=16)
    beside = rule.branches(1, 15, block=16, most=16)  # 15 sampled rows fill the flat part
    assert beside < alone


def test_no_greedy_rows_verify_one_block_and_bad_counts_are_refused() -> None:
    rule = WidthRule(TAU, Curve.of([(1, 1.0)]))
    assert rule.branches(0, 8, block=16, most=16) == 1
    with pytest.raises(ValueError, match="expected greedy, others >= 0"):
        rule.branches(-1, 0, block=16, most=16)
    with pytest.raises(ValueError, match="block, most >= 1"):
        rule.branches(1, 0, block=0, most=16)


def test_what_the_step_costs_besides_the_verify_widens_the_choice() -> None:
    """A verify whose cost grows with every token: alone it never pays to widen, but beside a
    drafter pass that costs ten verifies of one block, four blocks commit more per second."""
    cost = Curve.of([(16, 1.0), (32, 2.0)])
    assert WidthRule(TAU, cost).branches(1, 0, block=16, most=16) == 1
    assert WidthRule(TAU, cost, fixed=10.0).branches(1, 0, block=16, most=16) > 1
    with pytest.raises(ValueError, match="fixed: expected finite seconds >= 0"):
        WidthRule(TAU, cost, fixed=-1.0)


def drive(pace: Pace, rows: int, seconds: dict[int, float], steps: int, t: float = 0.0) -> tuple[
        list[int], float]:
    """`steps` decode steps of `rows` rows, each lasting what `seconds` says for its width."""
    chosen = []
    for _ in range(steps):
        w = pace.step(rows, t)
        chosen.append(w)
        t += seconds[w]
    return chosen, t


def test_pace_tries_each_width_then_takes_the_most_tokens_a_second() -> None:
    pace = Pace((1, 16), tau_prior=5.0)
    chosen, _ = drive(pace, 1, {1: 0.002, 16: 0.004}, 40)  # 500 against 1,250 tokens a second
    assert set(chosen[:8]) == {1, 16}                       # each width's run first
    assert chosen[8:] == [16] * 32
    assert pace.seconds[(1, 1, "")] == pytest.approx(0.002)
    assert pace.seconds[(16, 1, "")] == pytest.approx(0.004)


def test_pace_falls_to_plain_decode_where_a_wide_step_costs_more_than_it_commits() -> None:
    pace = Pace((1, 16), tau_prior=5.0)
    chosen, _ = drive(pace, 32, {1: 0.007, 16: 0.040}, 40)  # 5 / 40 ms < 1 / 7 ms
    assert chosen[8:] == [1] * 32
    assert pace.bucket(32) == 32 and pace.bucket(17) == 32 and pace.bucket(3) == 4


def test_pace_runs_the_other_width_again_less_often_the_further_behind_it_is() -> None:
    def plain_runs(tau: float) -> int:
        pace = Pace((1, 16), tau_prior=tau, explore=10, run=3)
        chosen, _ = drive(pace, 1, {1: 0.002, 16: 0.004}, 206)
        after = chosen[6:]                                   # past the two first runs
        return sum(1 for i, w in enumerate(after) if w == 1 and (i == 0 or after[i - 1] != 1))

    # 200 steps at one stream; plain decode 1 token / 2 ms, trees tau / 4 ms
    assert plain_runs(3.0) == 11                             # 1.5x behind: a run every ~18 steps
    assert plain_runs(5.0) == 7                              # 2.5x behind: every ~28 steps
    assert plain_runs(50.0) == 2                             # 25x behind: every 83 (8x at most)


def test_pace_follows_what_rows_commit() -> None:
    pace = Pace((1, 16), tau_prior=5.0, alpha=1.0)
    drive(pace, 1, {1: 0.002, 16: 0.004}, 12)
    pace.committed(16, 4, 4.0)                               # one token a row: not worth it
    chosen, _ = drive(pace, 1, {1: 0.002, 16: 0.004}, 5, t=1.0)
    assert chosen == [1] * 5
    assert pace.tokens(1) == 1.0 and pace.tokens(16) == 1.0


def test_pace_times_gaps_after_like_steps_and_drops_idle_ones() -> None:
    pace = Pace((1, 16), tau_prior=5.0, run=10)              # ten steps of the first width
    w = pace.step(2, 0.0)
    pace.step(2, 0.01)                                       # follows no step: not timed
    assert pace.seconds == {}
    pace.step(3, 0.02)                  # a request joined (its prefill in the gap): still timed
    assert pace.seconds == {(w, 2, ""): pytest.approx(0.01)}
    pace.pause()                                             # idle: the next gap is not timed
    pace.step(3, 5.0)
    pace.step(3, 5.01)
    pace.step(3, 5.02)
    assert pace.seconds[(w, 4, "")] == pytest.approx(0.01)
    pace.step(3, 9.0)                                        # far over the average: dropped
    assert pace.seconds[(w, 4, "")] == pytest.approx(0.01)
    pace.step(3, 9.01, "grammar")                            # another kind: its own figures
    pace.step(3, 9.03, "grammar")
    pace.step(3, 9.05, "grammar")
    assert pace.seconds == {(w, 2, ""): pytest.approx(0.01), (w, 4, ""): pytest.approx(0.01),
                            (w, 4, "grammar"): pytest.approx(0.02)}


def test_an_average_started_on_an_idle_gap_is_replaced() -> None:
    pace = Pace((1, 16), tau_prior=5.0, run=8)
    w = pace.step(1, 0.0)
    pace.step(1, 0.001)
    pace.step(1, 0.5)                                        # the first gap timed: idle time
    assert pace.seconds[(w, 1, "")] == pytest.approx(0.499)
    pace.step(1, 0.502)
    assert pace.seconds[(w, 1, "")] == pytest.approx(0.002)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"widths": ()}, "distinct widths"),
    ({"widths": (1, 1)}, "distinct widths"),
    ({"widths": (0, 16)}, "distinct widths"),
    ({"widths": (1, 16), "alpha": 0.0}, "0 < alpha"),
    ({"widths": (1, 16), "run": 1}, "run >= 2"),
])
def test_bad_paces_are_refused(kwargs, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Pace(**kwargs)
    with pytest.raises(ValueError, match="rows"):
        Pace((1, 16)).step(0, 0.0)


def test_pace_table_reports_each_widths_step_and_rate_by_bucket_and_kind() -> None:
    pace = Pace((1, 16), tau_prior=5.0, alpha=1.0)
    drive(pace, 3, {1: 0.002, 16: 0.004}, 12)
    pace.committed(16, 4, 12.0)                              # three tokens a row
    table = pace.table()
    assert table["tau"] == {"width 1": 1.0, "width 16": 3.0}
    cell = table["steps"]["B4"]
    assert cell["width 1"] == {"step_ms": pytest.approx(2.0), "row_tok_s": pytest.approx(500.0)}
    assert cell["width 16"] == {"step_ms": pytest.approx(4.0), "row_tok_s": pytest.approx(750.0)}
