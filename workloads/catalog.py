"""The registry of domains (a business with its tools) and scenarios (one caller goal, written
as a short script against `Dialogue`), plus a compact way to write tool schemas.

    RESTAURANT = domain("restaurant", "Luigi's Trattoria", tools=[tool("book_table", ...), ...])

    @scenario(RESTAURANT, "book_table")
    def book_table(d: Dialogue) -> None: ...

Scenarios marked heldout=True never appear in the train split: a model tuned on train is
measured on callers whose goals it has not seen (the tools and domains are shared).

Workload versions: a scenario added after version 1 says since=N and joins the train pool of
workload N and later only. Datagen records its version, so completions answered for an older
workload rebuild against exactly its prompts (speculator/responses.py checks prompt hashes).
Held-out scenarios are the same in every version, so held-out scores compare across versions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnspec.tools_grammar.schema import ToolSpec, parse_tools

if TYPE_CHECKING:
    from turnspec.workloads.dialogue import Dialogue

WORKLOADS = (1, 2)  # 2: 40 more train goals (scenarios_v2_*.py, 2026-12-01)
LATEST_WORKLOAD = WORKLOADS[-1]
DATE = r"^\d{4}-\d{2}-\d{2}$"
TIME = r"^\d{2}:\d{2}$"


def string(description: str, **extra: Any) -> dict:
    return {"type": "string", "description": description, **extra}


def integer(description: str, minimum: int | None = None, maximum: int | None = None) -> dict:
    bounds = {k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None}
    return {"type": "integer", "description": description, **bounds}


def number(description: str, minimum: float | None = None, maximum: float | None = None) -> dict:
    bounds = {k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None}
    return {"type": "number", "description": description, **bounds}


def enum(description: str, *values: str) -> dict:
    return {"type": "string", "description": description, "enum": list(values)}


def boolean(description: str) -> dict:
    return {"type": "boolean", "description": description}


def array(description: str, items: dict, max_items: int | None = None) -> dict:
    extra = {"maxItems": max_items} if max_items is not None else {}
    return {"type": "array", "description": description, "items": items, **extra, "minItems": 1}


def obj(properties: dict, optional: tuple[str, ...] = ()) -> dict:
    """A nested object schema; every property is required unless listed in optional."""
    required = [name for name in properties if name not in optional]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tool(name: str, description: str, /, optional: tuple[str, ...] = (), **properties: dict) -> dict:
    """An OpenAI Chat Completions function tool; properties are required unless optional."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": obj(properties, optional)}}


COMMON_TOOLS = (
    tool("end_call", "End the phone call after the caller says goodbye.",
         reason=enum("Why the call ends", "resolved", "caller_request", "no_response")),
    tool("transfer_to_human", "Transfer the caller to a human agent.",
         reason=string("Short reason for the transfer"),
         department=enum("Which team", "billing", "support", "sales", "general")),
)


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
