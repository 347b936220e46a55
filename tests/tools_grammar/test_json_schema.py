"""The JSON Schema subset: structural checks and instance validation."""

from __future__ import annotations

import pytest

from turnspec.tools_grammar.json_schema import check_schema, validate_instance


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string", "minLength": -1}, "p.minLength: expected a non-negative integer, got -1"),
        ({"type": "number", "minimum": "0"}, "p.minimum: expected a finite number, got '0'"),
        ({"type": "number", "minimum": 5, "maximum": 1}, "p: minimum=5 is greater than maximum=1"),
        ({"type": "string", "pattern": "(["}, "p.pattern: invalid regular expression '(['"),
        ({"enum": []}, "p.enum: expected a non-empty list, got []"),
        ({"type": ["string", "string"]}, "p.type: expected a type name or a list of distinct names"),
        ({"type": "string", "nullable": True}, "p: unsupported JSON Schema keyword 'nullable'; use \"type\": [\"<type>\", \"null\"]"),
        ({"$ref": "#/$defs/Missing"}, "p.$ref: reference '#/$defs/Missing' does not resolve"),
        ({"$ref": "https://example.com/s.json"}, "p.$ref: only local references"),
        ({"type": "array", "items": {"type": "date"}}, "p.items.type: unknown type 'date'"),
        ({"anyOf": [{"type": "string"}, 3]}, "p.anyOf[1]: expected a JSON Schema object, got int"),
        ({"type": "object", "additionalProperties": {"type": "nope"}}, "p.additionalProperties.type: unknown type 'nope'"),
        ({"type": "string", "pattern": "^a", "maxLength": 3}, "p: pattern cannot be combined with minLength/maxLength"),
    ],
)
def test_check_schema_rejects_with_path(schema: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        check_schema(schema, "p")
    assert str(info.value).startswith(message), str(info.value)


ADDRESS = {
    "type": "object",
    "properties": {
        "to": {"$ref": "#/$defs/Place"},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}, "maxItems": 2},
        "note": {"type": ["string", "null"], "maxLength": 5},
        "tip": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "kind": {"const": "ride"},
    },
    "required": ["to"],
    "additionalProperties": False,
    "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}},
}


def test_valid_instances_pass() -> None:
    check_schema(ADDRESS, "p")
    validate_instance({"to": {"lat": 1.5}}, ADDRESS, "a")
    validate_instance({"to": {"lat": 1}, "stops": [{"lat": 2}], "note": None, "tip": None, "code": "SFO", "kind": "ride"}, ADDRESS, "a")
    validate_instance({"to": {"lat": 1}, "tip": 2.5, "note": "hi"}, ADDRESS, "a")


@pytest.mark.parametrize(
    ("instance", "message"),
    [
        ({"to": {}}, "a.to: missing required property 'lat'"),
        ({"to": {"lat": True}}, "a.to.lat: expected number, got boolean True"),
        ({"to": {"lat": 1}, "stops": [{"lat": 1}] * 3}, "a.stops: expected at most 2 items, got 3"),
        ({"to": {"lat": 1}, "stops": [{"lat": "x"}]}, "a.stops[0].lat: expected number, got string 'x'"),
        ({"to": {"lat": 1}, "note": "too long"}, "a.note: expected at most 5 characters"),
        ({"to": {"lat": 1}, "tip": 0}, "a.tip: matches none of anyOf"),
        ({"to": {"lat": 1}, "code": "sfo"}, "a.code: 'sfo' does not match pattern"),
        ({"to": {"lat": 1}, "kind": "walk"}, "a.kind: expected 'ride', got 'walk'"),
        ({"to": {"lat": 1}, "extra": 1}, "a: unexpected property 'extra' (declared: to, stops, note, tip, code, kind)"),
    ],
)
def test_invalid_instances_name_the_path(instance: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_instance(instance, ADDRESS, "a")
    assert str(info.value).startswith(message), str(info.value)


def test_integers_follow_json_semantics() -> None:
    schema = {"type": "integer", "minimum": 1}
    validate_instance(2.0, schema, "n")  # 2.0 is an integer in JSON Schema
    with pytest.raises(ValueError, match="expected integer, got number 2.5"):
        validate_instance(2.5, schema, "n")
    with pytest.raises(ValueError, match="expected integer, got boolean"):
        validate_instance(True, schema, "n")
    with pytest.raises(ValueError, match="expected one of \\[1, 2\\], got True"):
        validate_instance(True, {"enum": [1, 2]}, "n")
