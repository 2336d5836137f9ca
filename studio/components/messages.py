"""The transcript widget: messages colored by role, tool calls as cards, findings inline.

Every piece of trace data goes through ``st.text`` / ``st.code`` /
``st.json`` (escaped by Streamlit); markdown is used only for our own labels.
"""
from __future__ import annotations

import json
from typing import Any

import streamlit as st

from studio import services

from .i18n import lang, tr

ROLE_BADGE = {"system": "gray", "user": "blue", "assistant": "green", "tool": "orange"}
ROLE_ICON = {"system": ":material/settings:", "user": ":material/person:", "assistant": ":material/smart_toy:",
             "tool": ":material/build:"}
SEVERITY_BADGE = {"error": "red", "warning": "orange", "info": "blue"}
SEVERITY_ICON = {"error": ":material/error:", "warning": ":material/warning:", "info": ":material/info:"}
LONG_CHARS = 600
"""Messages longer than this are collapsed into an expander showing their token count."""


def role_badge(role: Any) -> None:
    role = str(role)
    st.badge(role if role in ROLE_BADGE else "other role", icon=ROLE_ICON.get(role, ":material/help:"),
             color=ROLE_BADGE.get(role, "violet"))


def finding_badges(findings: list[dict]) -> None:
    """One badge per rule (the rule names are ours, never trace data)."""
    rules = sorted({(f.get("severity", "error"), str(f.get("rule", "?"))) for f in findings})
    if not rules:
        return
    with st.container(horizontal=True, gap="small"):
        for severity, rule in rules:
            st.badge(_safe_name(rule), icon=SEVERITY_ICON.get(severity, ":material/warning:"),
                     color=SEVERITY_BADGE.get(severity, "gray"))


def finding_box(f: dict) -> None:
    """Rule, explanation, provider error text and fix, as escaped text.

    In 中文 mode the explanation and fix are the rule's Chinese text (keyed by rule id); the finding's own
    English detail line stays below it, and the provider's exact error text is never translated.
    """
    box = {"error": st.error, "info": st.info}.get(f.get("severity", "error"), st.warning)
    severity = str(f.get("severity"))
    zh = services.rule_zh(str(f.get("rule"))) if lang() == "zh" else None
    # Rule and severity names come from our linter, never from the trace; the message text
    # may quote trace ids, so it goes through st.text.
    if zh is not None:
        box(f"**{_safe_name(f.get('rule'))}** · {services.SEVERITY_ZH.get(severity, _safe_name(severity))} · "
            f"{zh[0]}", icon=":material/report:")
        st.text(zh[1])
        st.caption("详情（英文原文）：")
        st.text(str(f.get("message") or ""))
    else:
        box(f"**{_safe_name(f.get('rule'))}** · {_safe_name(f.get('severity'))}", icon=":material/report:")
        st.text(str(f.get("message") or ""))
    api_error = f.get("api_error")
    if api_error:
        st.caption(tr("The provider answers (HTTP 400):", "服务商返回（HTTP 400，原文）："))
        st.code(api_error if isinstance(api_error, str) else json.dumps(api_error, ensure_ascii=False, indent=2),
                language=None, wrap_lines=True)
    if f.get("fix"):
        st.caption(tr("Fix:", "修复："))
        st.text(zh[2] if zh is not None else str(f["fix"]))


def content_parts(parts) -> None:
    """Images as thumbnails with their byte size; other non-text parts by type and size (never raw base64)."""
    for part in parts:
        size = services.human_bytes(part.size)
        if part.kind == "image":
            with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                shown = False
                if part.data:
                    try:
                        st.image(part.data, width=120)
                        shown = True
                    except Exception:  # noqa: BLE001  (not an image the browser can show: its size still helps)
                        shown = False
                st.caption(tr(f"image · {part.mime or 'unknown type'} · {size}" + ("" if shown else " · not shown"),
                              f"图片 · {part.mime or '未知类型'} · {size}" + ("" if shown else " · 未显示")))
        elif part.kind == "image-url":
            st.caption(tr("image by URL (not fetched):", "图片链接（未加载）："))
            st.text(part.ref)
        else:
            st.caption(f"{_safe_name(part.kind)} · {size}")
            st.text(part.ref)


def tool_definitions(tools) -> None:
    """The tools a request offers: name, description, parameters (* = required), as a table of text."""
    rows = services.tool_definitions(tools)
    if not rows:
        st.caption(tr("No tools offered on this call.", "这次调用没有提供工具。"))
        return
    with st.expander(tr(f"Tools offered ({len(rows)})", f"提供的工具（{len(rows)}）"), icon=":material/build:"):
        import pandas as pd

        st.dataframe(pd.DataFrame(rows), hide_index=True, column_config={
            "name": tr("name", "名称"), "description": tr("description", "说明"),
            "parameters": tr("parameters (* required)", "参数（* 必填）")})


def _safe_name(value: Any) -> str:
    """Rule / severity names: letters, digits and dashes only, so they can sit in markdown labels."""
    return "".join(ch for ch in str(value or "?") if ch.isalnum() or ch in "-_ ") or "?"


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            return json.dumps(json.loads(raw), ensure_ascii=False, indent=2)
        except ValueError:
            return raw
    return json.dumps(raw, ensure_ascii=False, indent=2)


def tool_call_cards(message: dict, answered: dict[str, int]) -> None:
    for tc in message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []:
        if not isinstance(tc, dict):
            st.code(json.dumps(tc, ensure_ascii=False), language=None)
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
        with st.container(border=True):
            with st.container(horizontal=True, gap="small"):
                st.badge(tr("tool call", "工具调用"), icon=":material/call_made:", color="violet")
                st.text(f"{fn.get('name')}  ·  id {tc.get('id')}")
            target = answered.get(str(tc.get("id")))
            st.caption(tr(f"answered by message #{target}", f"由消息 #{target} 回应") if target is not None
                       else tr("no tool result in this payload", "此请求中没有对应的工具结果"))
            st.code(_arguments(fn.get("arguments")), language="json", wrap_lines=True)


def message_card(index: int, message: Any, tokens: int | None, findings: list[dict],
                 made: dict[str, int], answered: dict[str, int], status: str | None = None,
                 key: str = "msg") -> None:
    """One payload message: role badge, index, tokens, findings, content (collapsed when long).

    ``key`` makes the card's container key unique on the page; the role part
    of the key (one of our five names, never trace text) picks its CSS accent.
    """
    if not isinstance(message, dict):
        with st.container(border=True):
            st.badge(tr("not a message object", "不是消息对象"), color="red")
            st.code(json.dumps(message, ensure_ascii=False), language=None)
        return
    role = message.get("role")
    accent = role if isinstance(role, str) and role in ROLE_BADGE else "other"
    if findings:
        accent = "flagged"
    with st.container(border=True, key=f"card-{accent}-{key}-{index}"):
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            role_badge(role)
            st.caption(f"#{index}" + (f" · {tokens:,} tokens" if tokens is not None else ""))
            if status == "added":
                st.badge(tr("new", "新增"), icon=":material/add:", color="green")
            if message.get("name") is not None:
                st.text(f"name: {message.get('name')}")
            if role == "tool":
                call_id = str(message.get("tool_call_id"))
                origin = made.get(call_id)
                st.text(tr(f"↳ answers {call_id} (from #{origin})", f"↳ 回应 #{origin} 的 {call_id}") if origin is not None
                        else tr(f"↳ answers {call_id}: no such call before it", f"↳ 回应 {call_id}：之前没有这个调用"))
        if findings:
            finding_badges(findings)
        content = services.split_content(message.get("content"))
        text = content.text
        if content.parts:
            content_parts(content.parts)
        if text:
            if len(text) > LONG_CHARS:
                size = f"{len(text):,} chars" + (f" · {tokens:,} tokens" if tokens is not None else "")
                st.text(text[:LONG_CHARS] + " …")
                # Lazy: the whole text (a 50 KB tool result) is sent only once the expander is opened.
                full = st.expander(tr(f"{size} — show all", f"{size} —— 展开全文"), icon=":material/unfold_more:",
                                   key=f"full-{key}-{index}", on_change="rerun")
                if full.open is not False:
                    with full:
                        st.text(text)
            else:
                st.text(text)
        if message.get("tool_calls"):
            tool_call_cards(message, answered)
        for f in findings:
            finding_box(f)
        others = {k: v for k, v in message.items() if k not in ("role", "content", "tool_calls", "tool_call_id", "name")}
        if others:
            st.caption(tr("other keys", "其他字段"))
            st.code(json.dumps(others, ensure_ascii=False, indent=2), language="json", wrap_lines=True)
