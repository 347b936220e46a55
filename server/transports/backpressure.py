"""Sends with a deadline: a client that stops reading must not hold its turn (and its KV)
forever. aiohttp buffers at most its writer limit per connection and then awaits the socket's
drain; that wait blocks only the stalled connection's own task, never the event loop, and this
helper bounds it: past `seconds` the connection is aborted (RST) with a logged reason, and the
caller's `finally` closes the turn, which aborts the engine request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger("turnspec.server")


class ClientStalled(ConnectionError):
    """The client read nothing for the send timeout; its connection was aborted."""


async def send_within(send: Awaitable[None], seconds: float,
                      transport: asyncio.BaseTransport | None, who: str) -> None:
    """Await `send`; if it is still waiting for the socket to drain after `seconds`, abort
    `transport` and raise `ClientStalled`."""
    try:
        async with asyncio.timeout(seconds):
            await send
    except TimeoutError:
        log.warning("%s: the client read nothing for %.1f s (send buffer full); its turn is "
                    "cancelled and the connection closed", who, seconds)
        if transport is not None:
            transport.abort()
        raise ClientStalled(f"{who}: the client read nothing for {seconds:g} s") from None
