"""Tool definitions and tool_choice, parsed once at the edge into validated dataclasses.

Accepts OpenAI Chat Completions tools (`{"type": "function", "function": {name, description,
parameters}}`) and the Responses API's flat form (`{"type": "function", "name": ...,
"description": ..., "parameters": ...}`). Errors name the offending path, e.g.
`tools[2].function.parameters.properties.city.type: unknown type 'text' (...)`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from turnspec.tools_grammar.json_schema import check_schema, validate_instance

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EMPTY_PARAMETERS: dict = {"type": "object", "properties": {}}

ChoiceMode = Literal["auto", "required", "none", "function"]


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """One callable function: its name, what it does, and a JSON Schema (type object) for its
    arguments. Build through `parse_tools` to get the schema checked."""

    name: str
    description: str
    parameters: dict

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise ValueError(
                f"tool name: expected 1-64 characters of letters, digits, '_' or '-', got {self.name!r}"
            )
        if not isinstance(self.description, str):
            raise ValueError(f"tool {self.name}: description must be a string")
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name}: parameters must be a JSON Schema with type 'object'")

    def to_openai(self) -> dict:
        """The Chat Completions form, as a client would send it."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(slots=True, frozen=True)
class ToolChoice:
    """auto: text or a call; required: at least one call; none: no call; function: call `name`."""

    mode: ChoiceMode
    name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "required", "none", "function"):
            raise ValueError(f"tool_choice: expected auto, required, none or function, got {self.mode!r}")
        if (self.mode == "function") != (self.name is not None):
            raise ValueError(f"tool_choice: a name is given exactly when mode is 'function' (mode={self.mode!r}, name={self.name!r})")


def parse_tools(raw: list[dict] | None) -> list[ToolSpec]:
    """Parse and check a request's `tools`; raises ValueError naming the path of the problem."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"tools: expected a list of tool objects, got {type(raw).__name__}")
    tools: list[ToolSpec] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        tool = _parse_tool(item, f"tools[{i}]")
        if tool.name in seen:
            raise ValueError(
                f"tools[{i}]: duplicate tool name {tool.name!r} (already defined by tools[{seen[tool.name]}])"
            )
        seen[tool.name] = i
        tools.append(tool)
    return tools


def _parse_tool(item: Any, path: str) -> ToolSpec:
    if not isinstance(item, dict):
        raise ValueError(f"{path}: expected a tool object, got {type(item).__name__}")
    kind = item.get("type", "function")
    if kind != "function":
        raise ValueError(f"{path}.type: only 'function' tools are supported, got {kind!r}")
    if "function" in item:
        body, body_path = item["function"], f"{path}.function"
        if not isinstance(body, dict):
            raise ValueError(f"{body_path}: expected an object with name/description/parameters")
    else:  # Responses API flat form
        body, body_path = item, path
    name = body.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"{body_path}.name: expected 1-64 characters of letters, digits, '_' or '-', got {name!r}"
        )
    description = body.get("description") or ""
    if not isinstance(description, str):
        raise ValueError(f"{body_path}.description: expected a string, got {type(description).__name__}")
    parameters = body.get("parameters")
    params_path = f"{body_path}.parameters"
    if parameters is None:
        parameters = dict(_EMPTY_PARAMETERS)
    if not isinstance(parameters, dict):
        raise ValueError(f"{params_path}: expected a JSON Schema object, got {type(parameters).__name__}")
    if "type" not in parameters:
        parameters = {"type": "object", **parameters}
    if parameters["type"] != "object":
        raise ValueError(f"{params_path}.type: function parameters must be type 'object', got {parameters['type']!r}")
    if "properties" not in parameters:
        parameters = {**parameters, "properties": {}}
    check_schema(parameters, params_path)
    return ToolSpec(name=name, description=description, parameters=parameters)


def parse_tool_choice(raw: str | dict | None, tools: list[ToolSpec]) -> ToolChoice:
    """Parse `tool_choice`. None means "auto" when tools are given, else "none"."""
    names = [t.name for t in tools]
    if raw is None:
        return ToolChoice("auto" if tools else "none")
    if isinstance(raw, str):
        if raw not in ("auto", "required", "none"):
            raise ValueError(f"tool_choice: expected 'auto', 'required', 'none' or a function object, got {raw!r}")
        if raw == "required" and not tools:
            raise ValueError("tool_choice: 'required' needs at least one tool in tools")
        return ToolChoice(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"tool_choice: expected a string or an object, got {type(raw).__name__}")
    if raw.get("type") != "function":
        raise ValueError(f"tool_choice.type: expected 'function', got {raw.get('type')!r}")
    if "function" in raw:
        body, path = raw["function"], "tool_choice.function.name"
        name = body.get("name") if isinstance(body, dict) else None
    else:
        name, path = raw.get("name"), "tool_choice.name"
    if not isinstance(name, str):
        raise ValueError(f"{path}: expected a function name, got {name!r}")
    if name not in names:
        known = ", ".join(names) if names else "no tools were given"
        raise ValueError(f"{path}: unknown tool {name!r} (known: {known})")
    return ToolChoice("function", name)


def validate_arguments(tool: ToolSpec, arguments: Any) -> None:
    """Raise ValueError("<tool>.arguments.<path>: ...") unless `arguments` fits the tool's schema."""
    if not isinstance(arguments, dict):
        raise ValueError(f"{tool.name}.arguments: expected a JSON object, got {type(arguments).__name__}")
    validate_instance(arguments, tool.parameters, f"{tool.name}.arguments")


def find_tool(tools: list[ToolSpec], name: str) -> ToolSpec | None:
    for tool in tools:
        if tool.name == name:
            return tool
    return None


def tools_hash(tools: list[ToolSpec]) -> str:
    """Stable digest of what a grammar depends on: names and parameter schemas, in order."""
    canon = json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:32]
