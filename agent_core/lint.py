"""Protocol linter (placeholder until the linter issue lands): the two pairing rules."""
from __future__ import annotations


def api_rejection(body: dict, profile: str = "openai") -> dict | None:
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and m.get("tool_calls"):
            answered, j = set(), i + 1
            while j < len(messages) and isinstance(messages[j], dict) and messages[j].get("role") == "tool":
                answered.add(messages[j].get("tool_call_id"))
                j += 1
            missing = [c.get("id") for c in m["tool_calls"] if c.get("id") not in answered]
            if missing:
                return {"error": {"message": "An assistant message with 'tool_calls' must be followed by tool "
                                  "messages responding to each 'tool_call_id'. The following tool_call_ids did not "
                                  f"have response messages: {', '.join(missing)}", "type": "invalid_request_error",
                                  "param": f"messages.[{i}].role", "code": None}}
        if m.get("role") == "tool":
            k = i - 1
            while k >= 0 and isinstance(messages[k], dict) and messages[k].get("role") == "tool":
                k -= 1
            if k < 0 or not (messages[k].get("role") == "assistant" and messages[k].get("tool_calls")):
                return {"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a "
                                  "preceeding message with 'tool_calls'.", "type": "invalid_request_error",
                                  "param": f"messages.[{i}].role", "code": None}}
    return None
