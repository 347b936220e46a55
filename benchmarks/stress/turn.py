"""The normal turn every phase of the campaign ends with: the real model's greedy answer to
a question with one right answer, over the WebSocket."""

from __future__ import annotations

from turnspec.benchmarks.stress.rawws import Closed, RawSocket

QUESTION = "What is the capital of France? Answer in one word."


async def normal_turn(port: int, timeout_s: float = 120.0) -> bool:
    """True when the turn completes and names Paris."""
    try:
        ws = await RawSocket.connect("127.0.0.1", port)
    except (OSError, ConnectionError):
        return False
    text = []
    try:
        ws.send_json({"type": "response.create", "input": QUESTION, "max_output_tokens": 8,
                      "temperature": 0.0})
        await ws.drain()
        while True:
            e = await ws.recv(timeout_s)
            if e.get("type") == "response.output_text.delta":
                text.append(e["delta"])
            elif e.get("type") in ("response.completed", "response.incomplete"):
                return "Paris" in "".join(text)
            elif e.get("type") in ("error", "response.failed"):
                return False
    except (Closed, TimeoutError, ConnectionError):
        return False
    finally:
        await ws.close()
