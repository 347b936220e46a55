"""The socket-level fuzzer, CI-sized: a few hundred hostile messages over WS, HTTP and gRPC
against a live server on the real engine. Every message is answered with a structured error
(or a stream, or a clean close); nothing is dropped, nothing is a bare 5xx; afterwards the
server answers a normal turn and holds no sequence or KV block. `make stress` sends 10,000."""

from __future__ import annotations

from turnspec.benchmarks.stress.fuzz import Fuzzer
from turnspec.benchmarks.stress.hostile import cases

from ...server.srv_helpers import assert_serves_normally, start_server

LIMIT = 16 << 10  # max_message_bytes: huge strings stay cheap


async def test_hostile_messages_are_all_answered(stress_engine):
    srv = start_server(stress_engine, max_message_bytes=LIMIT, default_max_tokens=4)
    try:
        batch = cases(400, seed=7, limit=LIMIT)
        kinds = {(c.transport, c.kind) for c in batch}
        assert len(kinds) >= 25  # every family of hostile message is in the sample
        r = await Fuzzer("127.0.0.1", srv.port, srv.grpc_port).run(batch, concurrency=8)
        assert r.messages >= 400
        assert r.bad == 0, "\n".join(r.bad_examples)
        assert r.internal_errors == 0, r.codes
        assert r.answered == r.messages
        await assert_serves_normally(srv.port)
    finally:
        srv.stop()
