"""Compare: two traces call by call (message counts, HTTP status, where the payloads start to differ)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from studio import services
from studio.components import state
from studio.components.i18n import tr
from studio.components.safe import md_escape

PAGE = 50

st.title(tr("Compare two traces", "对比两个 trace"))
st.caption(tr("Call k of one trace beside call k of the other: where do the two runs start to send different "
              "payloads?", "把两个 trace 的第 k 次调用并排：两次运行从哪里开始发送不同的请求？"))
sources = state.all_sources()
keys = list(sources)
if len(keys) < 2:
    st.info(tr("Open at least two traces (samples, recordings or uploads) to compare them.",
               "至少需要两个 trace（示例、录制或上传）才能对比。"), icon=":material/info:")
    st.stop()
left_key = state.open_key() or keys[0]


def label(k: str) -> str:
    return f"{sources[k].label}  ·  {sources[k].kind}"


c1, c2 = st.columns(2)
a = c1.selectbox(tr("Left", "左"), keys, index=keys.index(left_key), format_func=label, key="compare_left")
others = [k for k in keys if k != a]
b = c2.selectbox(tr("Right", "右"), others, format_func=label, key="compare_right")
try:
    left = services.load(sources[a], redact=state.redacted())
    right = services.load(sources[b], redact=state.redacted())
except services.LoadError as err:
    st.error(md_escape(err), icon=":material/error:")
    st.stop()

n = max(len(left.trace.calls), len(right.trace.calls))
pages = services.paginate(n, 1, PAGE).pages
page = st.pagination(pages, key="compare_page") if pages > 1 else 1
window = services.paginate(n, page, PAGE)
pairs = services.compare(left, right, window.start, window.stop)
m1, m2, m3 = st.columns(3)
m1.metric(tr("Calls left", "左侧调用"), f"{len(left.trace.calls):,}")
m2.metric(tr("Calls right", "右侧调用"), f"{len(right.trace.calls):,}")
first = next((p.call for p in pairs if not p.same), None)
m3.metric(tr("First different call (this page)", "第一个不同的调用（本页）"), "—" if first is None else str(first))
st.dataframe(pd.DataFrame([{"call": p.call, "left messages": p.left_messages, "right messages": p.right_messages,
                            "left status": p.left_status, "right status": p.right_status,
                            "verdict": p.verdict} for p in pairs]),
             hide_index=True, key=f"compare_table_{page}", column_config={
                 "call": st.column_config.NumberColumn(tr("call", "调用"), format="%d", width="small"),
                 "verdict": tr("payloads", "请求对比")})
if first is not None and st.button(tr(f"Open call {first} of the left trace in the Timeline",
                                      f"在时间线中打开左侧 trace 的第 {first} 次调用"),
                                   key="compare_go", icon=":material/timeline:"):
    state.jump("screens/timeline.py", left, first)
