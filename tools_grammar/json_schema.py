"""The subset of JSON Schema that tool parameters may use: a structural check and a validator.

Why a subset: every schema we accept is also compiled by xgrammar into a grammar, and every call
the grammar lets the model write must pass `validate_instance`. Keeping the keyword list short
keeps those two in agreement (tests/tools_grammar/test_grammar.py checks grammar output against
this validator). Where xgrammar is stricter than this validator (it anchors `pattern`, enforces
`format`, and in strict mode forbids undeclared properties) the grammar's language is a subset of
what validates, which is the safe direction.

Supported: type (one name or a list, e.g. ["string", "null"]), enum, const, properties,
required, additionalProperties, items, minItems, maxItems, minLength, maxLength, pattern,
minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf, $ref to local "#/$defs/..." or
"#/definitions/...", plus annotations (description, title, default, examples, format, $comment).
"""

from __future__ import annotations

import math
import re
from typing import Any

TYPE_NAMES = ("object", "array", "string", "number", "integer", "boolean", "null")
ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "format", "$comment", "$schema", "$id"}
)
VALIDATION_KEYWORDS = frozenset(
    {
        "type", "enum", "const", "properties", "required", "additionalProperties", "items",
        "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "anyOf", "$ref", "$defs", "definitions",
    }
)
_HINTS = {
    "oneOf": "use anyOf",
    "allOf": "merge the subschemas into one object",
    "nullable": 'use "type": ["<type>", "null"]',
    "patternProperties": "list the properties explicitly",
}


def _kind(value: Any) -> str:
    """JSON type name of a parsed JSON value ("integer" for integral numbers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return ok and math.isfinite(value)


def check_schema(schema: Any, path: str, root: dict | None = None) -> None:
    """Raise ValueError("<path>: ...") unless `schema` is a well-formed schema of the subset."""
    if not isinstance(schema, dict):
        raise ValueError(f"{path}: expected a JSON Schema object, got {type(schema).__name__}")
    root = schema if root is None else root
    for key in schema:
        if key not in VALIDATION_KEYWORDS and key not in ANNOTATIONS:
            hint = f"; {_HINTS[key]}" if key in _HINTS else ""
            supported = ", ".join(sorted(VALIDATION_KEYWORDS))
            raise ValueError(
                f"{path}: unsupported JSON Schema keyword {key!r}{hint} (supported: {supported})"
            )
    _check_type(schema, path)
    _check_bounds(schema, path)
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        raise ValueError(f"{path}.enum: expected a non-empty list, got {schema['enum']!r}")
    if "pattern" in schema:
        pattern = schema["pattern"]
        if not isinstance(pattern, str):
            raise ValueError(f"{path}.pattern: expected a string, got {type(pattern).__name__}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{path}.pattern: invalid regular expression {pattern!r}: {exc}") from None
    if "pattern" in schema and ("minLength" in schema or "maxLength" in schema):
        # xgrammar drops the length limits of a pattern string, so the model could write a
        # string our validator then refuses; ask for the length inside the pattern instead.
        raise ValueError(f"{path}: pattern cannot be combined with minLength/maxLength; put the length in the pattern (e.g. '^.{{1,20}}$')")
    _check_object_keywords(schema, path, root)
    if "items" in schema:
        check_schema(schema["items"], f"{path}.items", root)
    if "anyOf" in schema:
        options = schema["anyOf"]
        if not isinstance(options, list) or not options:
            raise ValueError(f"{path}.anyOf: expected a non-empty list of schemas, got {options!r}")
        for i, option in enumerate(options):
            check_schema(option, f"{path}.anyOf[{i}]", root)
    for defs_key in ("$defs", "definitions"):
        defs = schema.get(defs_key)
        if defs is None:
            continue
        if not isinstance(defs, dict):
            raise ValueError(f"{path}.{defs_key}: expected an object of schemas")
        for name, sub in defs.items():
            check_schema(sub, f"{path}.{defs_key}.{name}", root)
    if "$ref" in schema:
        resolve_ref(schema["$ref"], root, f"{path}.$ref")


def _check_type(schema: dict, path: str) -> None:
    if "type" not in schema:
        return
    declared = schema["type"]
    names = declared if isinstance(declared, list) else [declared]
    if not names or len(set(map(str, names))) != len(names):
        raise ValueError(f"{path}.type: expected a type name or a list of distinct names, got {declared!r}")
    for name in names:
        if name not in TYPE_NAMES:
            raise ValueError(f"{path}.type: unknown type {name!r} (expected one of {', '.join(TYPE_NAMES)})")


def _check_bounds(schema: dict, path: str) -> None:
    for key in ("minItems", "maxItems", "minLength", "maxLength"):
        if key in schema and not _is_count(schema[key]):
            raise ValueError(f"{path}.{key}: expected a non-negative integer, got {schema[key]!r}")
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema and not _is_number(schema[key]):
            raise ValueError(f"{path}.{key}: expected a finite number, got {schema[key]!r}")
    for low, high in (("minItems", "maxItems"), ("minLength", "maxLength"), ("minimum", "maximum")):
        if low in schema and high in schema and schema[low] > schema[high]:
            raise ValueError(f"{path}: {low}={schema[low]} is greater than {high}={schema[high]}")


def _check_object_keywords(schema: dict, path: str, root: dict) -> None:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{path}.properties: expected an object mapping names to schemas")
    for name, sub in properties.items():
        check_schema(sub, f"{path}.properties.{name}", root)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{path}.required: expected a list of property names, got {required!r}")
    if len(set(required)) != len(required):
        raise ValueError(f"{path}.required: duplicate names in {required!r}")
    for name in required:
        if name not in properties:
            raise ValueError(f"{path}.required: {name!r} is required but not declared in properties")
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool):
        check_schema(extra, f"{path}.additionalProperties", root)


def resolve_ref(ref: Any, root: dict, path: str) -> dict:
    """Resolve a local reference "#/$defs/Name" (or "#/definitions/Name") against `root`."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise ValueError(f"{path}: only local references like '#/$defs/Name' are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"{path}: reference {ref!r} does not resolve")
        node = node[part]
    if not isinstance(node, dict):
        raise ValueError(f"{path}: reference {ref!r} does not point at a schema")
    return node


def validate_instance(value: Any, schema: dict, path: str, root: dict | None = None) -> None:
    """Raise ValueError("<path>: ...") unless `value` satisfies `schema` (already checked)."""
    root = schema if root is None else root
    if "$ref" in schema:
        validate_instance(value, resolve_ref(schema["$ref"], root, path), path, root)
    if "anyOf" in schema:
        errors = []
        for option in schema["anyOf"]:
            try:
                validate_instance(value, option, path, root)
                break
            except ValueError as exc:
                errors.append(str(exc))
        else:
            raise ValueError(f"{path}: matches none of anyOf ({'; '.join(errors)})")
    kind = _kind(value)
    if "type" in schema:
        allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = kind in allowed or (kind == "integer" and "number" in allowed)
        if not ok:
            raise ValueError(f"{path}: expected {' or '.join(allowed)}, got {kind} {value!r}")
    if "enum" in schema and not any(_json_equal(value, v) for v in schema["enum"]):
        raise ValueError(f"{path}: expected one of {schema['enum']!r}, got {value!r}")
    if "const" in schema and not _json_equal(value, schema["const"]):
        raise ValueError(f"{path}: expected {schema['const']!r}, got {value!r}")
    if kind in ("integer", "number"):
        _validate_number(value, schema, path)
    elif kind == "string":
        _validate_string(value, schema, path)
    elif kind == "array":
        _validate_array(value, schema, path, root)
    elif kind == "object":
        _validate_object(value, schema, path, root)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _validate_number(value: float, schema: dict, path: str) -> None:
    checks = (
        ("minimum", lambda lim: value >= lim, ">="),
        ("maximum", lambda lim: value <= lim, "<="),
        ("exclusiveMinimum", lambda lim: value > lim, ">"),
        ("exclusiveMaximum", lambda lim: value < lim, "<"),
    )
    for key, holds, op in checks:
        if key in schema and not holds(schema[key]):
            raise ValueError(f"{path}: expected a number {op} {schema[key]}, got {value!r}")


def _validate_string(value: str, schema: dict, path: str) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise ValueError(f"{path}: expected at least {schema['minLength']} characters, got {value!r}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ValueError(f"{path}: expected at most {schema['maxLength']} characters, got {value!r}")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        raise ValueError(f"{path}: {value!r} does not match pattern {schema['pattern']!r}")


def _validate_array(value: list, schema: dict, path: str, root: dict) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        raise ValueError(f"{path}: expected at least {schema['minItems']} items, got {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise ValueError(f"{path}: expected at most {schema['maxItems']} items, got {len(value)}")
    if "items" in schema:
        for i, item in enumerate(value):
            validate_instance(item, schema["items"], f"{path}[{i}]", root)


def _validate_object(value: dict, schema: dict, path: str, root: dict) -> None:
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise ValueError(f"{path}: missing required property {name!r}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            validate_instance(item, properties[name], f"{path}.{name}", root)
        elif extra is False:
            known = ", ".join(properties) or "none"
            raise ValueError(f"{path}: unexpected property {name!r} (declared: {known})")
        elif isinstance(extra, dict):
            validate_instance(item, extra, f"{path}.{name}", root)
