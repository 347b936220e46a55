"""Kernel tests run many tiny tensor ops (interpreted Triton programs, per-query float64 loops);
intra-op threads only add contention there (3.2 s vs 0.07 s for one naive loop on the 2-core CI
box under load), so these tests run torch single-threaded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread_torch() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
