"""The learning datastore (`--spec-datastore-learn`): answers are indexed when due, the newest
are kept, the more specific of two stores drafts, and an engine that learns from its own
answers stays plain greedy while its datastore branch wins on a repeat."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.local.test_spec_step import engine, greedy_case, run
from tests.engine.tiny import make_drafter
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.spec.proposers.datastore import TokenDatastore
from turnspec.engine.spec.proposers.learning import REBUILD_MIN_TOKENS, LearningDatastore


@pytest.mark.parametrize("background", [False, True])
def test_learns_once_enough_new_tokens_came(background: bool) -> None:
    store = LearningDatastore(background=background)
    short = [7, 8, 9, 10, 11]
    store.learn(short)
    assert store.answers == 1 and store.draft([7, 8, 9], 2) == []  # not due: too few tokens
    store.learn(list(range(100, 100 + REBUILD_MIN_TOKENS)))  # now due
    store.wait()
    assert store.draft([7, 8, 9], 2) == [10, 11]
    assert store.draft([100, 101, 102], 3) == [103, 104, 105]
    store.learn([1, 2])  # shorter than a 3-gram: nothing to index
    assert store.answers == 2
    store.close()


def test_rebuilds_wait_for_a_sixteenth_more() -> None:
    store = LearningDatastore(background=False)
    store.learn(list(range(1000, 1000 + 1600)))  # indexed at once (>= 64 new tokens)
    assert store.draft([1000, 1001, 1002], 1) == [1003]
    store.learn([5, 6, 7, 8] * 20)  # 80 new tokens < 1600 / 16: waits
    assert store.draft([5, 6, 7], 1) == []
    store.learn([5, 6, 7, 9] * 5)  # 100 new tokens: due
    assert store.draft([5, 6, 7], 1) == [8]  # 20 sources say 8, 5 say 9


def test_keeps_the_newest_tokens() -> None:
    store = LearningDatastore(max_tokens=1024, background=False)
    store.learn([1, 2, 3, 4] + [50] * 600)
    store.learn([1, 2, 3, 5] + [60] * 600)  # the first answer no longer fits
    store.wait()
    assert store.answers == 1 and store.draft([1, 2, 3], 1) == [5]
    with pytest.raises(ValueError, match="max_tokens=2; expected an integer >= 3"):
        LearningDatastore(max_tokens=2)


def test_the_longer_match_drafts_and_the_served_answers_win_ties() -> None:
    base = TokenDatastore([[9, 1, 2, 3, 40, 41], [1, 2, 3, 30, 31]])
    store = LearningDatastore(base, background=False)
    assert store.draft([9, 1, 2, 3], 2) == [40, 41]  # only the base store knows it
    store.learn([1, 2, 3, 70, 71])
    store.wait()
    assert store.draft([0, 1, 2, 3], 2) == [70, 71]  # both matched 3 tokens: the served one
    assert store.draft([9, 1, 2, 3], 2) == [40, 41]  # the base matched 4
    assert TokenDatastore([[9, 1, 2, 3, 40]]).draft_match([9, 1, 2, 3], 1) == ([40], 4)
    assert TokenDatastore([[9, 1, 2, 3, 40]]).draft_match([8, 8, 8], 1) == ([], 0)


def test_an_engine_learning_its_answers_stays_greedy_and_drafts_them(tmp_path: Path) -> None:
    """Served once, the answers are in the store; served again, its branch drafts exactly what
    the target says, so the repeat takes fewer verify steps, and the output is still plain
    greedy."""
    vocab, seed = 12, 1
    target, prompts, sampling, plain = greedy_case(tmp_path, vocab, seed, (5, 9, 13), 32)
    core = engine(target, vocab, make_drafter(target, 8, seed), lookup=True, branches=2)
    assert core.speculation.learner is None
    core = engine(target, vocab, make_drafter(target, 8, seed), lookup=True, branches=2,
                  learn=True)
    first, finals = run(core, prompts, sampling)
    core.speculation.learner.wait()
    assert first == plain and core.speculation.learner.answers == len(prompts)
    again, finals_again = run(core, prompts, sampling)
    assert again == plain
    steps = [sum(f.spec.verify_steps for f in fs) for fs in (finals, finals_again)]
    assert steps[1] < steps[0], steps  # the store drafts the answers it learned
    with pytest.raises(ValueError, match="spec_datastore: its block rides as a verify branch"):
        engine(target, vocab, make_drafter(target, 8, seed), lookup=True, learn=True)


def test_the_config_checks_the_learning_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="spec_datastore_learn_tokens: expected an integer >= 1024"):
        LocalEngineConfig(model_dir=str(tmp_path), spec_datastore_learn_tokens=100)
    with pytest.raises(ValueError, match="spec_datastore_learn: expected True or False"):
        LocalEngineConfig(model_dir=str(tmp_path), spec_datastore_learn="yes")
