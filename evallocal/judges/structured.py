"""JSON-schema helpers for structured generation: a token budget and a validity check.

`token_budget(schema)` is an upper bound on the tokens a compact JSON value of that schema can
take (every string char may cost a token; keys, quotes, commas and brackets counted too).
Unbounded strings and arrays get a default bound, so always bound them in prompts' schemas
(`maxLength`, `maxItems`): the grammar cannot force the JSON to close, only the budget can.

`validate(value, schema)` uses `jsonschema` when installed, else a small checker for the
subset evallocal's scorers use (type, properties, required, enum, const, items, min/max
Items/Length, minimum/maximum, additionalProperties: false).
"""

from __future__ import annotations

import json
from typing import Any

DEFAULT_STRING_TOKENS = 64
DEFAULT_ARRAY_ITEMS = 8
_NUMBER_TOKENS = 12


def token_budget(schema: Any, _depth: int = 0) -> int:
    if not isinstance(schema, dict) or _depth > 20:
        return DEFAULT_STRING_TOKENS
    if "const" in schema:
        return len(json.dumps(schema["const"])) + 1
    if "enum" in schema:
        return max((len(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]), default=1) + 1
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return max((token_budget(s, _depth + 1) for s in schema[key]), default=DEFAULT_STRING_TOKENS)
    kind = schema.get("type")
    if isinstance(kind, list):
        return max(token_budget({**schema, "type": k}, _depth + 1) for k in kind)
    if kind == "string":
        return int(schema.get("maxLength", DEFAULT_STRING_TOKENS)) + 3
    if kind in ("integer", "number"):
        return _NUMBER_TOKENS
    if kind == "boolean":
        return 2
    if kind == "null":
        return 2
    if kind == "array":
        items = int(schema.get("maxItems", max(DEFAULT_ARRAY_ITEMS, int(schema.get("minItems", 0)))))
        return 2 + items * (token_budget(schema.get("items", {}), _depth + 1) + 1)
    if kind == "object" or "properties" in schema:
        total = 2
        for key, sub in schema.get("properties", {}).items():
            total += len(json.dumps(key, ensure_ascii=False)) + 2 + token_budget(sub, _depth + 1)
        return total
    return DEFAULT_STRING_TOKENS


class SchemaError(ValueError):
    """A value does not match its schema (message names the path)."""


def validate(value: Any, schema: dict) -> None:
    """Raise SchemaError when `value` does not match `schema`."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a dependency; kept for slim installs
        _check(value, schema, "$")
        return
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        path = "$" + "".join(f"[{p!r}]" for p in exc.absolute_path)
        raise SchemaError(f"{path}: {exc.message}") from None


_TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def _check(value: Any, schema: dict, path: str) -> None:
    if not isinstance(schema, dict):
        return
    if "const" in schema and value != schema["const"]:
        raise SchemaError(f"{path}: expected {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(f"{path}: {value!r} not one of {schema['enum']!r}")
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        ok = any(
            isinstance(value, _TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool))
            for k in kinds if k in _TYPES
        )
        if not ok:
            raise SchemaError(f"{path}: expected {kind}, got {type(value).__name__}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", float("inf")):
            raise SchemaError(f"{path}: string length {len(value)} out of bounds")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < schema.get("minimum", float("-inf")) or value > schema.get("maximum", float("inf")):
            raise SchemaError(f"{path}: {value} out of bounds")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", float("inf")):
            raise SchemaError(f"{path}: {len(value)} items out of bounds")
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                raise SchemaError(f"{path}: missing {key!r}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            if extra:
                raise SchemaError(f"{path}: unexpected keys {sorted(extra)}")
        for key, sub in props.items():
            if key in value:
                _check(value[key], sub, f"{path}[{key!r}]")
