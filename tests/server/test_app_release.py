"""A stopped server lets go of its engine: a process that starts server after server (this
suite, a bench) must not keep every engine alive (aiohttp caches each app's middleware chain,
keyed by the app; server/transports/http.py forget_stopped_apps)."""

from __future__ import annotations

import gc
import urllib.request
import weakref

from turnspec.engine.chat import ChatTemplate
from turnspec.engine.fake import FakeFixedRateEngine

from .srv_helpers import start_server


def test_a_stopped_server_frees_its_engine(smollm2_dir) -> None:
    engine = FakeFixedRateEngine(ChatTemplate.from_model_dir(smollm2_dir), first_token_ms=0.0, interval_ms=1.0, tokens_per_request=1)
    srv = start_server(engine)
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/health", timeout=10) as r:
        assert r.status == 200  # a request through the middleware chain aiohttp caches
    srv.stop()
    alive = weakref.ref(engine)
    del engine, srv
    gc.collect()
    held = alive()  # on failure: what still holds it (seen once under a loaded 2-worker run)
    assert held is None, [f"{type(r).__module__}.{type(r).__qualname__}" for r in gc.get_referrers(held)]
