"""Per-thread CPU seconds from /proc: a thread that burns CPU shows up as its own entry."""

from __future__ import annotations

import threading

import pytest

from turnspec.speculator.thread_cpu import other_threads_cpu, thread_cpu_seconds


def _burn(n: int, box: dict[str, int]) -> None:
    box["tid"] = threading.get_native_id()
    x = 0
    for i in range(n):
        x += i * i
    box["x"] = x
    box["event"].wait()  # stay alive until the second reading: an ended thread leaves /proc


def test_a_busy_thread_is_counted_apart_from_the_excluded_ones():
    box: dict = {"event": threading.Event()}
    before = thread_cpu_seconds()
    assert threading.get_native_id() in before
    t = threading.Thread(target=_burn, args=(3_000_000, box))
    t.start()
    while "x" not in box:
        t.join(0.01)
    after = thread_cpu_seconds()
    box["event"].set()
    t.join()
    tid = box["tid"]
    assert after[tid] > 0.02              # millions of Python additions take CPU, not only wall time
    main = {threading.get_native_id()}
    got = other_threads_cpu(before, after, main, top=2)
    assert got["other_threads_busy"] >= 1 and got["other_threads_top_s"][0] >= round(after[tid], 2)
    assert got["other_threads_cpu_s"] >= got["other_threads_top_s"][0]
    without = other_threads_cpu(before, after, main | {tid})
    assert without["other_threads_cpu_s"] == pytest.approx(got["other_threads_cpu_s"] - after[tid], abs=0.02)


def test_other_threads_cpu_math_and_checks():
    before = {1: 1.0, 2: 5.0}
    after = {1: 3.5, 2: 5.0, 3: 0.25, 4: 1.0}     # 3 and 4 started in between
    assert other_threads_cpu(before, after, {1}) == {
        "other_threads_cpu_s": 1.25, "other_threads_busy": 2, "other_threads_top_s": [1.0, 0.25]}
    with pytest.raises(ValueError, match="top: expected >= 0"):
        other_threads_cpu(before, after, set(), top=-1)
