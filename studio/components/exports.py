"""Export buttons: this call as JSON / curl / pytest, the trace as an HTML report, each optionally redacted.

The files are made by the export layer (through ``services``) only when a
button is pressed (``st.download_button`` with a callable), so a 5,000-call
trace costs nothing until its report is asked for.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio import call_services, services

from .i18n import tr


def export_menu(loaded: services.Loaded, call: int, profile: str) -> None:
    """A popover with the four exports and a redaction checkbox."""
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in Path(loaded.source.label).stem)[:60] or "trace"
    with st.popover(tr("Export", "导出"), icon=":material/download:"):
        redact = st.checkbox(tr("Redact personal data (phones, emails, ID/bank cards, API keys)",
                                "隐去个人信息（手机号、邮箱、身份证/银行卡号、API 密钥）"),
                             value=bool(st.session_state.get("open_redact")), key="export_redact")
        suffix = "-redacted" if redact else ""
        base = (st.session_state.get("curl_base") or "").strip() or None    # the curl tab's Base URL box
        for fmt, label in (("json", tr(f"Call {call} as JSON", f"第 {call} 次调用：JSON")),
                           ("curl", tr(f"Call {call} as curl", f"第 {call} 次调用：curl")),
                           ("pytest", tr(f"Call {call} as a pytest file", f"第 {call} 次调用：pytest 文件"))):
            ext, mime = call_services.CALL_EXPORTS[fmt]
            st.download_button(label, data=lambda fmt=fmt: call_services.export_call(loaded, call, fmt, redact, base),
                               file_name=f"{stem}-call{call}{suffix}.{ext}", mime=mime, key=f"export_{fmt}",
                               on_click="ignore", icon=":material/description:")
        st.download_button(tr("The trace as an HTML report", "整个 trace：HTML 报告"),
                           data=lambda: call_services.export_report(loaded, profile, redact),
                           file_name=f"{stem}{suffix}.html", mime="text/html", key="export_html",
                           on_click="ignore", icon=":material/summarize:")
        st.caption(tr("The report is self-contained: no scripts, nothing loaded from the network.",
                      "报告是自包含的：没有脚本，不从网络加载任何东西。"))
