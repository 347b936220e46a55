"""Admission: bounded FIFO in front of the engine (pure asyncio, no model)."""

from __future__ import annotations

import asyncio

import pytest

from turnspec.server.admission import Admission
from turnspec.server.errors import ApiError


async def test_runs_up_to_capacity_then_queues_fifo_then_refuses():
    adm = Admission(max_running=2, max_queue=2, retry_after_s=3.0)
    assert await adm.acquire() == 0.0 and await adm.acquire() == 0.0
    order: list[int] = []

    async def waiter(i: int) -> None:
        await adm.acquire()
        order.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(2)]
    await asyncio.sleep(0)
    assert (adm.running, adm.queued) == (2, 2)
    with pytest.raises(ApiError) as info:
        await adm.acquire()
    err = info.value
    assert err.status == 429 and err.grpc_code == "RESOURCE_EXHAUSTED"
    assert err.retry_after_s == 3.0 and err.code == "server_busy"
    assert "2 requests running, 2 queued" in err.message
    adm.release()  # the slot passes to the oldest waiter, running stays at 2
    await tasks[0]
    assert order == [0] and (adm.running, adm.queued) == (2, 1)
    adm.release()
    await tasks[1]
    assert order == [0, 1] and adm.running == 2
    adm.release()
    adm.release()
    assert (adm.running, adm.queued, adm.rejected) == (0, 0, 1)


async def test_cancelled_waiter_leaves_the_queue():
    adm = Admission(max_running=1, max_queue=1, retry_after_s=1.0)
    await adm.acquire()
    task = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    assert adm.queued == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert adm.queued == 0
    adm.release()
    assert adm.running == 0
    assert await adm.acquire() == 0.0


async def test_slot_granted_to_a_cancelled_waiter_is_passed_on():
    adm = Admission(max_running=1, max_queue=2, retry_after_s=1.0)
    await adm.acquire()
    first = asyncio.create_task(adm.acquire())
    second = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    adm.release()  # grants `first` ...
    first.cancel()  # ... which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await second  # got the slot first gave back
    assert (adm.running, adm.queued) == (1, 0)


def test_rejects_bad_limits():
    with pytest.raises(ValueError, match="max_running"):
        Admission(0, 1, 1.0)


async def test_check_room_refuses_exactly_when_acquire_would():
    adm = Admission(max_running=1, max_queue=1, retry_after_s=1.0)
    adm.check_room()  # free slot
    await adm.acquire()
    adm.check_room()  # room in the queue
    waiter = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    with pytest.raises(ApiError) as info:
        adm.check_room()
    assert info.value.status == 429 and adm.rejected == 1
    adm.release()
    await waiter
    adm.check_room()  # the waiter runs now; the queue has room again
