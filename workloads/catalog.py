"""The registry of domains (a business with its tools) and scenarios (one caller goal, written
as a short script against `Dialogue`), the tool catalogs' loader, and a compact way to write
tool schemas (synthetic.py's random tools).

    RESTAURANT = domain("restaurant", ("Luigi's Trattoria", ...), "the host stand", load_tools("restaurant"))

    @scenario(RESTAURANT, "book_table")
    def book_table(d: Dialogue) -> None: ...

A domain's tools are data: data/tools/<domain>.json, a JSON list of OpenAI Chat Completions
function tools (data/tools/common.json: the ones every domain offers).

Scenarios marked heldout=True never appear in the train split: a model tuned on train is
measured on callers whose goals it has not seen (the tools and domains are shared).

Workload versions: a scenario added after version 1 says since=N and joins the train pool of
workload N and later only. Datagen records its version, so completions answered for an older
workload rebuild against exactly its prompts (speculator/responses.py checks prompt hashes).
Held-out scenarios are the same in every version, so held-out scores compare across versions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnspec.tools_grammar.schema import ToolSpec, parse_tools

if TYPE_CHECKING:
    from turnspec.workloads.dialogue import Dialogue

WORKLOADS = (1, 2)  # 2: 40 more train goals, five per domain (since=2)
LATEST_WORKLOAD = WORKLOADS[-1]
DATE = r"^\d{4}-\d{2}-\d{2}$"
TOOLS_DIR = Path(__file__).parent / "data" / "tools"


def string(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


def integer(description: str, minimum: int | None = None, maximum: int | None = None) -> dict:
    bounds = {k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None}
    return {"type": "integer", "description": description, **bounds}


def enum(description: str, *values: str) -> dict:
    return {"type": "string", "description": description, "enum": list(values)}


def obj(properties: dict, optional: tuple[str, ...] = ()) -> dict:
    """A nested object schema; every property is required unless listed in optional."""
    required = [name for name in properties if name not in optional]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tool(name: str, description: str, /, optional: tuple[str, ...] = (), **properties: dict) -> dict:
    """An OpenAI Chat Completions function tool; properties are required unless optional."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": obj(properties, optional)}}


def load_tools(name: str) -> list[dict]:
    """The tools in data/tools/<name>.json: OpenAI Chat Completions function tools, in order."""
    path = TOOLS_DIR / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"tools {name!r}: expected a catalog at {path}")
    tools = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(tools, list) or not all(isinstance(t, dict) and t.get("type") == "function" for t in tools):
        raise ValueError(f"{path}: expected a JSON list of {{\"type\": \"function\", \"function\": ...}} tools")
    return tools


COMMON_TOOLS = tuple(load_tools("common"))


@dataclass(slots=True, frozen=True)
class Domain:
    """A business the voice agent answers for, with the tools it can call."""

    name: str
    businesses: tuple[str, ...]
    role: str  # "the front desk", used in the system prompt
    tools: tuple[dict, ...]
    specs: dict[str, ToolSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.businesses or not self.tools:
            raise ValueError(f"domain {self.name}: needs at least one business name and one tool")
        specs = parse_tools([*self.tools, *COMMON_TOOLS])  # checks every schema once
        self.specs.update({spec.name: spec for spec in specs})

    @property
    def all_tools(self) -> list[dict]:
        """Tools offered on every call in this domain: the domain's own, then the common ones."""
        return [*self.tools, *COMMON_TOOLS]


@dataclass(slots=True, frozen=True)
class Scenario:
    name: str  # "<domain>.<goal>"
    domain: Domain
    heldout: bool
    script: Callable[[Dialogue], None]
    since: int = 1  # the first workload version whose pool holds it


DOMAINS: dict[str, Domain] = {}
SCENARIOS: dict[str, Scenario] = {}


def domain(name: str, businesses: tuple[str, ...], role: str, tools: list[dict]) -> Domain:
    if name in DOMAINS:
        raise ValueError(f"domain {name!r} is defined twice")
    DOMAINS[name] = Domain(name, businesses, role, tuple(tools))
    return DOMAINS[name]


def scenario(dom: Domain, goal: str, heldout: bool = False,
             since: int = 1) -> Callable[[Callable[[Dialogue], None]], Callable[[Dialogue], None]]:
    name = f"{dom.name}.{goal}"
    if since not in WORKLOADS:
        raise ValueError(f"scenario {name!r}: since={since}, expected a workload version in {WORKLOADS}")
    if heldout and since != 1:
        raise ValueError(f"scenario {name!r}: held-out scenarios must be in every workload version "
                         f"(since=1), got since={since}")

    def register(script: Callable[[Dialogue], None]) -> Callable[[Dialogue], None]:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} is defined twice")
        SCENARIOS[name] = Scenario(name, dom, heldout, script, since)
        return script

    return register
