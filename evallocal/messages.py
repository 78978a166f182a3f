"""Text extraction from plain strings or agent message structures (SPEC.md, "Common shape")."""

from __future__ import annotations

from typing import Any, Mapping


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _text_of_parts(parts: Any) -> str | None:
    """The text of the last {"type": "text"} part, if any."""
    if not isinstance(parts, (list, tuple)):
        return None
    for part in reversed(parts):
        if isinstance(part, str):
            return part
        if _get(part, "type") == "text" and isinstance(_get(part, "text"), str):
            return _get(part, "text")
    return None


def message_text(message: Any) -> str | None:
    """Text of one message: content string, else the last text part of content / parts, else text."""
    if isinstance(message, str):
        return message
    content = _get(message, "content")
    if isinstance(content, str):
        return content
    for parts in (content, _get(message, "parts")):
        text = _text_of_parts(parts)
        if text is not None:
            return text
    text = _get(message, "text")
    return text if isinstance(text, str) else None


def output_text(output: Any) -> str:
    """The answer's text: a string as is; else the last assistant message that has text."""
    if isinstance(output, str):
        return output
    if output is None:
        raise ValueError("output is None: pass the model's answer as a string or a list of messages")
    messages = output if isinstance(output, (list, tuple)) else [output]
    for message in reversed(messages):
        role = _get(message, "role")
        if role not in (None, "assistant"):
            continue
        text = message_text(message)
        if text:
            return text
    return ""


def input_text(input: Any) -> str:
    """The request's text: a string as is; else the first user message of inputMessages / messages."""
    if isinstance(input, str):
        return input
    if input is None:
        raise ValueError("input is None: pass the user's request as a string or a list of messages")
    if isinstance(input, (list, tuple)):
        candidates = [input]
    else:
        candidates = [_get(input, "inputMessages"), _get(input, "messages")]
    for messages in candidates:
        if not isinstance(messages, (list, tuple)):
            continue
        for message in messages:
            if _get(message, "role") == "user":
                return message_text(message) or ""
    return ""
