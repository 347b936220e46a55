"""SpecPolicy: pause speculation where it does not pay, probe again with doubling back-off;
outputs stay identical to plain greedy whatever the policy decides."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.engine.local.test_spec_step import engine, run
from tests.engine.tiny import make_drafter, make_target
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.engine.protocol import SamplingParams


class _Seq:  # the fields SpecPolicy reads and writes on a Sequence
    def __init__(self, block: int = 8) -> None:
        self.spec_block, self.spec_ema, self.spec_pause, self.spec_backoff = block, None, 0, 0


class _FixedPrice(SpecPolicy):
    def record_step(self, speculative: bool, seconds: float) -> None:
        pass


def _plain_steps_until_probe(policy: SpecPolicy, seq: _Seq) -> int:
    n = 0
    while not policy.speculates(seq):
        policy.after_plain_step(seq)
        n += 1
    return n


def test_unprofitable_sequence_backs_off_doubling_then_probes() -> None:
    p, s = SpecPolicy(initial_cost=2.0, min_backoff=4, max_backoff=16), _Seq()
    steps = 0
    while p.speculates(s):                       # optimistic seed: pauses after a few misses
        p.after_spec_step(s, 1)
        steps += 1
    assert 1 <= steps <= 4                       # 3 -> 2.4, 1.98, 1.69, 1.48 < 0.75 * 2
    pauses = []
    for _ in range(4):                           # every probe fails: 4, 8, 16, 16
        pauses.append(_plain_steps_until_probe(p, s))
        p.after_spec_step(s, 1)
    assert pauses == [4, 8, 16, 16]


def test_first_pause_is_one_plain_step_by_default() -> None:
    """A tool turn's misses are mostly one-offs before predictable text again: the first pause
    is a single plain step, and only misses that run on double it (1, 2, 4)."""
    p, s = SpecPolicy(initial_cost=2.0), _Seq()
    for _ in range(5):
        p.after_spec_step(s, 6)                  # a predictable stretch
    while p.speculates(s):
        p.after_spec_step(s, 1)                  # then misses until the EMA drops below 0.75 c
    pauses = []
    for _ in range(3):
        pauses.append(_plain_steps_until_probe(p, s))
        p.after_spec_step(s, 1)
    assert pauses == [1, 2, 4]


def test_profitable_sequence_keeps_speculating_and_a_good_probe_resumes() -> None:
    p, s = SpecPolicy(initial_cost=2.0), _Seq()
    for _ in range(50):
        assert p.speculates(s)
        p.after_spec_step(s, 4)
    s.spec_ema, s.spec_pause, s.spec_backoff = 1.2, 3, 8   # paused after a bad stretch
    assert _plain_steps_until_probe(p, s) == 3
    p.after_spec_step(s, 8)                                 # 0.7 * 1.2 + 0.3 * 8 = 3.24 > 2
    assert p.speculates(s) and s.spec_backoff == 0


def test_cost_is_measured_from_step_times() -> None:
    p = SpecPolicy(initial_cost=2.0)
    assert p.cost == 2.0
    p.record_step(True, 0.30)
    assert p.cost == 2.0                                    # plain steps not measured yet
    p.record_step(False, 0.10)
    assert p.cost == pytest.approx(3.0)


def test_always_ignores_pauses_and_block_one_never_speculates() -> None:
    p = SpecPolicy(mode="always")
    s = _Seq()
    s.spec_pause = 10
    assert p.speculates(s)
    assert not p.speculates(_Seq(block=1))


def test_invalid_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="expected one of"):
        SpecPolicy(mode="sometimes")
    with pytest.raises(ValueError, match="invalid parameters"):
        SpecPolicy(min_backoff=8, max_backoff=4)


@pytest.mark.parametrize("mode", ["adaptive", "always"])
def test_policy_never_changes_greedy_output(tmp_path: Path, mode: str) -> None:
    vocab, seed = 14, 2
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in (5, 12, 8)]
    sampling = SamplingParams(max_tokens=40, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    core = engine(target, vocab, make_drafter(target, 6, seed))
    # a price no random drafter can pay (kept fixed, not measured, so the test is
    # deterministic): adaptive rows pause and probe, mixed within batches
    core.speculation.policy = _FixedPrice(mode=mode, initial_cost=50.0)
    got, finals = run(core, prompts, sampling)
    assert got == plain
    steps = [f.spec.verify_steps if f.spec else 0 for f in finals]
    if mode == "always":
        assert all(f.spec.committed_tokens >= 39 for f in finals)   # every decode step speculated
    else:
        assert all(1 <= n < 39 // 2 for n in steps), steps          # mostly plain, some probes


def test_pauses_only_clear_losses_by_default() -> None:
    """Near break-even a sequence keeps speculating (a tool turn's dip is mostly a one-off);
    an EMA below pause_below x c pauses it. pause_below=1 pauses at break-even."""
    p, s = SpecPolicy(initial_cost=2.0), _Seq()
    s.spec_ema = 2.0
    p.after_spec_step(s, 1)                  # 0.7 * 2 + 0.3 = 1.7: below c, above 0.75 c
    assert p.speculates(s)
    p.after_spec_step(s, 1)                  # 1.49: below 0.75 * 2
    assert not p.speculates(s)
    q, t = SpecPolicy(initial_cost=2.0, pause_below=1.0), _Seq()
    t.spec_ema = 2.0
    q.after_spec_step(t, 1)
    assert not q.speculates(t)
    with pytest.raises(ValueError, match="invalid parameters"):
        SpecPolicy(pause_below=1.5)
