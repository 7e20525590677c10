"""A strict checker for the JSON Schema subset ``streaming/api/openapi.json`` uses.

Strict both ways: a field the answer has but the description does not declare is an error (the description must
keep up with the code), and a keyword this checker does not know is an error too (so a schema can never pass
because part of it was silently ignored).
"""

from __future__ import annotations

from typing import Any

__all__ = ["problems"]

_KNOWN = {"type", "properties", "required", "items", "enum", "const", "$ref", "allOf", "oneOf",
          "additionalProperties", "minimum", "maximum", "description"}
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def problems(value: Any, schema: dict[str, Any], doc: dict[str, Any], where: str = "$") -> list[str]:
    """Every way ``value`` departs from ``schema`` (``$ref`` resolved in ``doc``), as ``path: problem`` lines."""
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{where}: schema keywords this checker does not know: {sorted(unknown)}"]
    if "$ref" in schema:
        return problems(value, _resolve(schema["$ref"], doc), doc, where)
    if "oneOf" in schema:
        fits = [s for s in schema["oneOf"] if not problems(value, s, doc, where)]
        return [] if len(fits) == 1 else [f"{where}: matches {len(fits)} of the oneOf schemas, not exactly one"]
    if "allOf" in schema:
        return _object(value, [_resolve_all(s, doc) for s in schema["allOf"]], doc, where)
    out: list[str] = []
    if "type" in schema and not _is_type(value, schema["type"]):
        return [f"{where}: {value!r} is not of type {schema['type']}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} != {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{where}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{where}: {value} > {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += problems(item, schema["items"], doc, f"{where}[{i}]")
    if isinstance(value, dict) and ("properties" in schema or "additionalProperties" in schema):
        out += _object(value, [schema], doc, where)
    return out


def _object(value: Any, parts: list[dict[str, Any]], doc: dict[str, Any], where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object"]
    props: dict[str, Any] = {}
    required: set[str] = set()
    extra = None
    for part in parts:
        props.update(part.get("properties", {}))
        required |= set(part.get("required", ()))
        extra = part.get("additionalProperties", extra)
    out = [f"{where}: missing {k!r}" for k in sorted(required - set(value))]
    for k, v in value.items():
        if k in props:
            out += problems(v, props[k], doc, f"{where}.{k}")
        elif extra is not None:
            out += problems(v, extra, doc, f"{where}.{k}")
        else:
            out.append(f"{where}: {k!r} is not described")
    return out


def _resolve(ref: str, doc: dict[str, Any]) -> dict[str, Any]:
    node: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _resolve_all(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    return _resolve(schema["$ref"], doc) if "$ref" in schema else schema


def _is_type(value: Any, wanted: str | list[str]) -> bool:
    for t in [wanted] if isinstance(wanted, str) else wanted:
        if t == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if t in _TYPES and isinstance(value, _TYPES[t]):
            return True
    return False
