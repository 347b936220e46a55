"""One module per domain: its business names, its tools (data/tools/<domain>.json) and every
scenario of it, the first goals of workload 1, its later train goals and workload 2's (since=2).

Importing a module registers its domain and scenarios in `catalog`; `load_all` imports them in
`MODULES` order, which is the order of `catalog.DOMAINS`. The scenario pool does not depend on
it: `conversation.scenarios_for` sorts the pool by scenario name.
"""

from __future__ import annotations

import importlib

MODULES = ("telecom", "clinic", "ecommerce", "ride_hailing", "restaurant", "airline", "bank", "utilities")


def load_all() -> None:
    """Register every domain and its scenarios (a no-op after the first call)."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
