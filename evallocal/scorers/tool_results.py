"""`extract_tool_results(output)`: the results of tool calls found in agent output.

Meant for `get_context` of the hallucination scorer: the facts an agent fetched with tools are
the context its answer must stick to::

    create_hallucination_scorer(get_context=lambda run, step: [
        json.dumps({"tool": t["toolName"], "result": t["result"]}) for t in extract_tool_results(run["output"])
    ])

Understands the message shapes agents produce (dicts or objects with these attributes):
- a `toolInvocations` list on a message (or on its `content` object), entries with
  `state == "result"`, `toolName`, `toolCallId`, `args`, `result`;
- `{"type": "tool-invocation", "toolInvocation": {...}}` parts in `parts` / `content`;
- `{"type": "tool-result", "toolName", "toolCallId", "result" | "output"}` parts (model
  messages, often under `role == "tool"`);
- `{"type": "tool-<name>", "state": "output-available", "input", "output"}` parts (UI messages).
Each call appears once (by `toolCallId`), in order of appearance.
"""

from __future__ import annotations

from typing import Any, Mapping


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _messages(output: Any) -> list:
    if output is None or isinstance(output, str):
        return []
    if isinstance(output, (list, tuple)):
        return list(output)
    for key in ("messages", "response", "output"):
        inner = _get(output, key)
        if isinstance(inner, (list, tuple)):
            return list(inner)
    return [output]


def _from_invocation(inv: Any) -> dict | None:
    state = _get(inv, "state")
    if state not in (None, "result") or (state is None and _get(inv, "result") is None):
        return None  # a call still running (state "call" / "partial-call") has no result yet
    return {"toolName": _get(inv, "toolName"), "toolCallId": _get(inv, "toolCallId"),
            "args": _get(inv, "args"), "result": _get(inv, "result")}


def _from_part(part: Any) -> dict | None:
    kind = _get(part, "type")
    if not isinstance(kind, str):
        return None
    if kind == "tool-invocation":
        return _from_invocation(_get(part, "toolInvocation") or {})
    if kind == "tool-result":
        result = _get(part, "result")
        if result is None:
            result = _get(part, "output")
        return {"toolName": _get(part, "toolName"), "toolCallId": _get(part, "toolCallId"),
                "args": _get(part, "args") if _get(part, "args") is not None else _get(part, "input"),
                "result": result}
    if kind.startswith("tool-") and _get(part, "state") == "output-available":
        return {"toolName": kind[len("tool-"):], "toolCallId": _get(part, "toolCallId"),
                "args": _get(part, "input"), "result": _get(part, "output")}
    return None


def extract_tool_results(output: Any) -> list[dict]:
    """[{"toolName", "toolCallId", "args", "result"}, ...] for every finished tool call in `output`."""
    found: list[dict] = []
    seen: set = set()

    def add(entry: dict | None) -> None:
        if entry is None:
            return
        key = entry.get("toolCallId")
        if key is not None:
            if key in seen:
                return
            seen.add(key)
        found.append(entry)

    for message in _messages(output):
        content = _get(message, "content")
        holders = [message] + ([content] if content is not None and not isinstance(content, (str, list, tuple)) else [])
        for holder in holders:
            for inv in _get(holder, "toolInvocations") or ():
                add(_from_invocation(inv))
        part_lists = [_get(message, "parts")]
        if isinstance(content, (list, tuple)):
            part_lists.append(content)
        elif content is not None and not isinstance(content, str):
            part_lists.append(_get(content, "parts"))
        for parts in part_lists:
            if isinstance(parts, (list, tuple)):
                for part in parts:
                    add(_from_part(part))
    return found
