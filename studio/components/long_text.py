"""A long text (JSON body, curl command): whole and highlighted when small, one plain page at a time when big.

The cut into pages is ``studio/viewmodels/preview.py``; this only renders. The
text is trace data: it goes through ``st.code`` / ``st.text`` (escaped).
"""
from __future__ import annotations

import streamlit as st

from studio.viewmodels.preview import TextPages

from .i18n import tr


def long_text(pages: TextPages, *, language: str, key: str, file_name: str, mime: str = "text/plain") -> None:
    if pages.highlight:
        st.code(pages.text, language=language, wrap_lines=True)
        return
    size = len(pages.text)
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.caption(tr(f"{size:,} characters: shown as plain text, {pages.pages} pages.",
                      f"{size:,} 个字符：以纯文本分 {pages.pages} 页显示。"))
        # data as a callable: the whole text is handed over only when the button is clicked
        st.download_button(tr("Download all", "下载全文"), data=lambda: pages.text.encode("utf-8"),
                           file_name=file_name, mime=mime, key=f"{key}_download", icon=":material/download:",
                           on_click="ignore")
    number = st.pagination(pages.pages, key=f"{key}_page") if pages.pages > 1 else 1
    st.code(pages.page(number), language=None, wrap_lines=True)
