"""The studio's only door into agent_core: trace sources, parsing and cached view models.

Screens call these functions and render the result. Parsing is cached by the
sha256 of the file's bytes, and every view model by that digest (plus its
parameters), so switching pages or widgets never recomputes a trace.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from agent_core.core import models as _models
from agent_core.core.errors import ChainStudioError
from agent_core.core.caches import file_sha256
from agent_core.core.limits import read_input
from agent_core.core.msg import content_text
from agent_core.core.paths import SAMPLE_TRACES, traces_dir
from agent_core.export.redact import redact_trace
from agent_core.ingest import detect as _importers
from agent_core.lint import profiles as _profiles
from agent_core.lint import repair as _repair
from agent_core.trace.model import Trace
from agent_core.trace.tokens import counter_for
from agent_core.trim import registry as _policies
from studio import count_child as _count_child
from studio import opening as _opening
from studio import residency as _residency
from studio.launch_args import OPEN_ENV, open_argument  # noqa: F401 -- the trace the studio was started on
from studio import token_worker as _token_worker
from studio import view_store as _view_store
from studio.components.safe import displayable
from studio.viewmodels import compare as _compare
from studio.viewmodels import diff as _diff
from studio.viewmodels import drops as _drops
from studio.viewmodels import findings as _findings_vm
from studio.viewmodels import learn as _learn
from studio.viewmodels import learn_responses as _learn_responses
from studio.viewmodels import lineage as _lineage
from studio.viewmodels import recordings as _recordings
from studio.viewmodels import responses as _responses
from studio.viewmodels import search as _search
from studio.viewmodels import timeline as _timeline_vm
from studio.viewmodels import tokens as _tokens
from studio.viewmodels import verdicts as _verdicts
from studio.viewmodels.verdicts import default_profile, profile_note  # noqa: F401 -- the profile judging a trace
from studio.viewmodels import zh as _zh
from studio.viewmodels.content import human_bytes, split_content, tool_definitions
from studio.viewmodels.paging import paginate
from studio.viewmodels.timeline import conversation_size, tools_count

rule_zh = _zh.rule_zh
reason_zh = _zh.reason_zh
price_label_zh = _zh.price_label_zh
SEVERITY_ZH = _zh.SEVERITY_ZH

MAX_RECORDINGS = 30


@dataclass(frozen=True)
class Source:
    """Somewhere a trace comes from: a file on disk or bytes the user gave us."""

    key: str
    """Stable id in the picker (``sample:classic.jsonl``, ``paste:ab12...``)."""
    label: str
    """What the picker shows (a file name; render as text)."""
    kind: str
    """``open``, ``sample``, ``recording``, ``upload``, ``paste`` or ``chat``."""
    path: str | None = None
    """The file, re-read on every run so a growing recording stays current."""
    data: bytes | None = None
    """Uploaded or pasted bytes (kept in the session only)."""


@dataclass(frozen=True)
class Loaded:
    """A parsed trace and the digest every cached view is keyed by."""

    source: Source
    """Where it came from."""
    digest: str
    """sha256 of the bytes parsed."""
    trace: Trace
    """The parsed trace (shared via the cache: read-only)."""


class LoadError(ChainStudioError):
    """One plain sentence for the user (bad file, bad JSON, unknown format)."""


# --- where traces come from ----------------------------------------------

def recordings_dir() -> Path:
    return traces_dir()


def builtin_sources() -> list[Source]:
    """The ``--open`` file first, then bundled samples, then the newest ``MAX_RECORDINGS`` recordings, one level
    down too (``proxy-<time>/``, ``collect/``: labelled ``subfolder/name``). An ``--open`` file is listed once, in
    front."""
    out = [Source(f"sample:{p}", label, "sample", str(p)) for p, label in _recordings.trace_files(SAMPLE_TRACES)]
    out += [Source(f"recording:{p}", label, "recording", str(p))
            for p, label in _recordings.trace_files(recordings_dir(), True, MAX_RECORDINGS, subfolders=True)]
    opened = open_argument()
    if opened:
        target = Path(os.path.realpath(opened))      # Path.resolve raises on a symlink loop; the loader refuses it
        same = [s for s in out if s.path and Path(s.path).resolve() == target]
        first = same[0] if same else Source(f"open:{target}", target.name, "open", str(target))
        out = [first] + [s for s in out if s is not first]
    return out


def bytes_source(kind: str, name: str, data: bytes) -> Source:
    digest = hashlib.sha256(data).hexdigest()[:12]
    return Source(f"{kind}:{digest}", f"{name} ({kind})", kind, None, data)


# --- parsing ---------------------------------------------------------------

@st.cache_resource(max_entries=32, show_spinner=False)
def _parse(digest: str, _data: bytes, name: str) -> Trace:
    # cache_resource, not cache_data: a 1,000-call trace is not re-pickled on every rerun.
    # Pages only read it.
    trace = _importers.parse_any(_data, source=name)
    _residency.parsed(digest, len(_data))
    return trace


@st.cache_resource(max_entries=16, show_spinner=False)
def _redacted(digest: str, _trace: Trace) -> Trace:
    return redact_trace(_trace)


def load(source: Source, redact: bool = False) -> Loaded:
    """Read and parse a source; raises ``LoadError`` with one sentence.

    With ``redact``, phone numbers, emails, ID and bank card numbers and API
    keys are replaced by stable placeholders (a trace to share on screen); the
    redacted trace has its own digest, so no cached view mixes the two.
    """
    loaded = _load(source)
    if not redact:
        return loaded
    return Loaded(source, loaded.digest + ":redacted", _redacted(loaded.digest, loaded.trace))


@st.cache_resource(max_entries=64, show_spinner=False)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime: a rerun does not re-read and re-hash a 40 MB file; a growing recording changes both.
    return file_sha256(path)


@st.cache_resource(max_entries=32, show_spinner=False)
def _parse_file(digest: str, path: str) -> Trace:
    try:
        # the gate (a regular file, the limit), or the trace parsed before; kept on disk by ``opening.parse_file``
        trace = _importers.load_any(path, keep=False)
        _residency.parsed(digest, os.path.getsize(path))
        return trace
    except UnicodeDecodeError:
        raise LoadError(f"{Path(path).name} is not UTF-8 text.") from None
    except (ValueError, TypeError, KeyError) as err:
        raise LoadError(f"{Path(path).name} could not be read as a trace ({type(err).__name__}: {err}).") from None


opening_steps = _opening.prepare


def _load(source: Source) -> Loaded:
    if source.data is not None:
        data = source.data
    else:
        try:
            stat = Path(source.path or "").stat()
            if stat.st_size > 1_000_000:   # read (and hashed) once per version of the file, not per rerun
                digest = _file_digest(source.path or "", stat.st_size, stat.st_mtime_ns)
                _residency.admit(digest)
                _residency.read_from(digest, (source.path or "", stat.st_size, stat.st_mtime_ns))
                if _importers.line_log.is_line_log(Path(source.path or "")):
                    return Loaded(source, digest, _opening.load_line_log(source.path or "", digest))
                return Loaded(source, digest, _opening.parse_file(digest, source.path or "", stat.st_size, _parse_file))
            data = read_input(Path(source.path or ""))      # the one gate: a regular file within the limit
        except OSError as err:
            raise LoadError(f"Cannot read {source.path}: {err.strerror or err}.") from None
        except ChainStudioError as err:
            raise LoadError(str(err)) from None
    if not data.strip():
        raise LoadError(f"{source.label} is empty.")
    digest = hashlib.sha256(data).hexdigest()
    data, surrogates = displayable(data)      # lone surrogates cannot reach a page: shown as \ud800 text
    _residency.admit(digest)
    try:
        trace = _parse(digest, data, source.path or source.label)
    except ChainStudioError as err:
        raise LoadError(str(err)) from None
    except UnicodeDecodeError:
        raise LoadError(f"{source.label} is not UTF-8 text.") from None
    except (ValueError, TypeError, KeyError) as err:
        raise LoadError(f"{source.label} could not be read as a trace ({type(err).__name__}: {err}).") from None
    if surrogates:
        note = (f"{surrogates} lone surrogate(s) (\\ud800 ... in the JSON; no text encoding can show them) are "
                "displayed as their escape text")
        if note not in trace.warnings:
            trace.warnings.append(note)
    return Loaded(source, digest, trace)


# --- view models (cached by digest) ---------------------------------------

@st.cache_resource(max_entries=32, show_spinner=False)   # not unpickled per rerun (25,000 calls): pages only read
def _findings(digest: str, _trace: Trace, profile: str) -> list[dict]:
    _count_child.wait_findings(digest, profile)            # linted by a child of this server, if one lints it
    found = _view_store.load("findings", digest, profile)     # linted by another server (same code): not again
    if found is None:
        found = _findings_vm.findings_for(_trace, profile)
        _view_store.save("findings", digest, profile, found)
    return found


def findings(loaded: Loaded, profile: str) -> list[dict]:
    return _findings(loaded.digest, loaded.trace, profile)


@st.cache_data(max_entries=16, show_spinner=False)
def _verdict_matrix(digest: str, _trace: Trace) -> tuple[list[dict], list[dict]]:
    return _verdicts.trace_matrix(_trace), _verdicts.call_matrix(_trace)


def verdict_matrix(loaded: Loaded) -> tuple[list[dict], list[dict]]:
    """Every provider's verdict: (one row per provider for the trace, one row per call with a column per provider)."""
    return _verdict_matrix(loaded.digest, loaded.trace)


def problems(found: list[dict]) -> list[dict]:
    return _findings_vm.problems(found)


def findings_by_message(found: list[dict], call: int) -> dict[int | None, list[dict]]:
    return _findings_vm.findings_by_message(found, call)


@st.cache_resource(max_entries=16, show_spinner=False)   # not re-pickled per rerun: pages only read it
def _series(digest: str, _trace: Trace) -> list[_tokens.CallTokens]:
    series = _token_worker.series(digest, _trace, len(_trace.calls) >= _opening.BIG_CALLS)   # the worker's, stored
    _opening.counted(digest, True)       # a page may now read it instead of counting its rows
    return series


def token_series(loaded: Loaded) -> list[_tokens.CallTokens]:
    return _series(loaded.digest, loaded.trace)


@st.cache_data(max_entries=256, show_spinner=False)
def _seen(digest: str, _trace: Trace, call: int) -> _responses.SeenView | None:
    return _responses.what_the_model_saw(_trace, call)


def what_the_model_saw(loaded: Loaded, call: int) -> _responses.SeenView | None:
    """A Responses call's effective input (stored chain + this request's items), None for other calls."""
    return _seen(loaded.digest, loaded.trace, call)


@st.cache_resource(max_entries=16, show_spinner=False)   # one row per call: read-only, never re-pickled
def _rows(digest: str, _trace: Trace) -> list[dict]:
    # no token series here: the screen counts the rows it shows (``row_estimates``); no findings either
    return _timeline_vm.timeline_rows(_trace, None, [], _drops_of(digest, _trace))


def timeline_rows(loaded: Loaded) -> list[dict]:
    """The Timeline's rows without their findings: built while a big trace's linting child lints it."""
    return _rows(loaded.digest, loaded.trace)


@st.cache_resource(max_entries=32, show_spinner=False)
def _timeline(digest: str, _trace: Trace, profile: str) -> list[dict]:
    return _timeline_vm.with_findings(_rows(digest, _trace), _findings(digest, _trace, profile))


@st.cache_resource(max_entries=64, show_spinner=False)
def _drops_of(digest: str, _trace: Trace) -> dict[int, list[_drops.Dropped]]:
    return _drops.drops_by_call(_trace)


def drops(loaded: Loaded) -> dict[int, list[_drops.Dropped]]:
    """Call index -> the messages a memory event removed just before it."""
    return _drops_of(loaded.digest, loaded.trace)


@st.cache_resource(max_entries=16, show_spinner=False)    # per trace: each body's text, each call's runs
def search_index(digest: str, _trace: Trace) -> _search.SearchIndex:
    return _search.SearchIndex(_trace)


@st.cache_resource(max_entries=64, show_spinner=False)
def _search_cached(digest: str, _trace: Trace, query: str) -> _search.SearchResult:
    return search_index(digest, _trace).search(query, lambda: _drops_of(digest, _trace))


def search(loaded: Loaded, query: str) -> _search.SearchResult:
    """The calls whose payload carries ``query`` (case-insensitive) and the calls where it was dropped."""
    return _search_cached(loaded.digest, loaded.trace, query.strip())


compact_ranges = _lineage.compact_ranges
page_of = _timeline_vm.page_of
TIMELINE_FILTERS = _timeline_vm.FILTERS


def timeline(loaded: Loaded, profile: str) -> list[dict]:
    return _timeline(loaded.digest, loaded.trace, profile)


@st.cache_resource(max_entries=64, show_spinner=False)    # read-only; a 25,000-row filter is not re-run per step
def _table_view(digest: str, _trace: Trace, profile: str, filters: tuple[str, ...]) -> _timeline_vm.TableView:
    return _timeline_vm.table_view(_timeline(digest, _trace, profile), filters)


def table_view(loaded: Loaded, profile: str, filters: list[str]) -> _timeline_vm.TableView:
    """The Timeline's call table under ``filters``: its rows, their positions, its columns, the failed calls."""
    return _table_view(loaded.digest, loaded.trace, profile, tuple(filters))


tool_links = _timeline_vm.tool_links


@st.cache_data(max_entries=256, show_spinner=False)
def _call_diff(digest: str, _trace: Trace, call: int) -> _diff.CallDiff:
    return _diff.diff_calls(_trace, call)


def call_diff(loaded: Loaded, call: int) -> _diff.CallDiff:
    return _call_diff(loaded.digest, loaded.trace, call)


def message_tokens(loaded: Loaded, call: int) -> list[int]:
    c = loaded.trace.calls[call]
    counter = counter_for(c.model)
    return [counter.count_message(m) if isinstance(m, dict) else 0 for m in c.messages]


# --- live refresh and deep links --------------------------------------------------

def file_signature(source: Source) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file source; None for bytes in the session or a missing file. One stat."""
    if source.path is None:
        return None
    try:
        st_ = os.stat(source.path)
    except OSError:
        return None
    return st_.st_size, st_.st_mtime_ns


def find_source(sources: dict[str, Source], wanted: str) -> str | None:
    """The key of the source a ``?trace=`` value names: its key, its file name or label, or its path."""
    if not wanted:
        return None
    if wanted in sources:
        return wanted
    for key, s in sources.items():
        if wanted in (s.label, Path(s.path).name if s.path else None, s.path):
            return key
    return None


def deep_link_name(source: Source) -> str:
    """The ``?trace=`` value for a source: a file's name, else its key."""
    return Path(source.path).name if source.path else source.key


@st.cache_data(show_spinner=False)
def sample_descriptions() -> dict[str, str]:
    """Sample file name -> what it teaches, one line (read from sample_traces/README.md)."""
    out = {}
    readme = SAMPLE_TRACES / "README.md"
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("- `") and "`: " in line:
            name, _, what = line[3:].partition("`: ")
            out[name] = what.strip()
    return out


# --- compare two traces ------------------------------------------------------------

def compare(left: Loaded, right: Loaded, start: int, stop: int) -> list[_compare.CallPair]:
    """Calls ``start`` to ``stop`` of two traces side by side."""
    return _compare_cached(left.digest, left.trace, right.digest, right.trace, start, stop)


@st.cache_data(max_entries=32, show_spinner=False)
def _compare_cached(a: str, _left: Trace, b: str, _right: Trace, start: int, stop: int) -> list[_compare.CallPair]:
    return _compare.compare_traces(_left, _right, start, stop)


# --- tokens and cost -----------------------------------------------------------

def token_rows(loaded: Loaded) -> list[dict]:
    return _tokens.token_rows(token_series(loaded))


ROLE_PARTS = _tokens.ROLE_PARTS


@st.cache_data(max_entries=64, show_spinner=False)
def _bins(digest: str, _trace: Trace) -> list[_tokens.CallBin]:
    return _tokens.call_bins(_series(digest, _trace))


def call_bins(loaded: Loaded) -> list[_tokens.CallBin]:
    """The token series in at most ``CHART_POINTS`` bins of consecutive calls (one call each when it fits)."""
    return _bins(loaded.digest, loaded.trace)


def sample_rows(rows: list[dict]) -> list[dict]:
    return _tokens.sample_rows(rows)


def price_options() -> dict[str, _models.ModelFacts]:
    """The models a trace can be priced as, cheapest input first (the catalogue's priced rows)."""
    return {name: _models.facts(name) for name in _models.priced_models()}


def pricing(loaded: Loaded, chosen: str | None = None) -> _models.Pricing:
    """The model the trace's cost is computed with: ``chosen``, else its own priced model, else the default."""
    return _models.price_as(_models_of(loaded.digest, loaded.trace), chosen)


@st.cache_resource(max_entries=64, show_spinner=False)   # Trace.models walks every call: not on every rerun
def _models_of(digest: str, _trace: Trace) -> list[str]:
    return _trace.models


def cumulative(loaded: Loaded, price: _models.Pricing) -> list[dict]:
    return _cumulative(loaded.digest, loaded.trace, price)


@st.cache_resource(max_entries=64, show_spinner=False)   # a row per call: once per trace and price, read-only
def _cumulative(digest: str, _trace: Trace, price: _models.Pricing) -> list[dict]:
    return _tokens.cumulative_cost(_series(digest, _trace), price)


@st.cache_resource(max_entries=64, show_spinner=False)   # once per trace: each a pass over every call (25,000: 0.05 s)
def _series_facts(digest: str, _trace: Trace) -> tuple[list[int], float, str]:
    series = _series(digest, _trace)
    return _tokens.truncation_suspects(series), _tokens.tool_result_share(series), _tokens.reported_field(_trace)


def series_facts(loaded: Loaded) -> tuple[list[int], float, str]:
    """The truncation suspects, the tool results' share of the prompt tokens and the reported counts' usage key."""
    return _series_facts(loaded.digest, loaded.trace)


@st.cache_data(max_entries=64, show_spinner=False)
def _sampled(digest: str, _trace: Trace) -> int:
    return _token_worker.page_view(digest, _trace, "sampled", 0, _tokens.sampled_texts)    # the worker's, if stored


def sampled_texts(loaded: Loaded) -> int:
    """How many texts (over 2M characters) the trace's token counts estimate from a sample (0: all exact)."""
    return _sampled(loaded.digest, loaded.trace)


@st.cache_data(max_entries=64, show_spinner=False)
def _largest(digest: str, _trace: Trace, limit: int) -> list[_tokens.BigMessage]:
    return _token_worker.page_view(digest, _trace, "largest", limit, _tokens.largest_messages)


def largest_messages(loaded: Loaded, limit: int = 10) -> list[_tokens.BigMessage]:
    return _largest(loaded.digest, loaded.trace, limit)


# --- lint: profiles and repair ---------------------------------------------------

def profiles() -> list[str]:
    return list(_profiles.PROFILES)


def repair_strategies() -> list[str]:
    return list(_repair.STRATEGIES)


def repaired_request(loaded: Loaded, call: int, strategy: str, profile: str):
    """(repaired request body, edits as dicts, error findings left) for one call."""
    c = loaded.trace.calls[call]
    body, edits = _repair.repair_request(c.request, strategy=strategy, profile=profile)
    left = _repair.remaining_errors(body.get("messages"), body.get("tools"), profile=profile)
    return body, [e.export() for e in edits], [f.export() for f in left]


# --- learn -------------------------------------------------------------------

@st.cache_data(show_spinner=False)
def learn_steps() -> list[_learn.LearnStep]:
    return _learn.steps()


@st.cache_data(show_spinner=False)
def broken_variants() -> list[_learn.BrokenVariant]:
    return _learn.broken_variants()


@st.cache_data(show_spinner=False)
def responses_flow() -> list[_learn_responses.ResponsesStep]:
    """The Learn page's Responses API flow (generated by the demo model's Responses endpoint)."""
    return _learn_responses.responses_flow()


as_json = _learn_responses.as_json


# --- live chat ---------------------------------------------------------------

def chat_policies() -> list[str]:
    """Trim policies the chat page offers (the trim registry's names)."""
    return list(_policies.POLICIES)


def _make_policy(name: str, max_messages: int):
    takes = {p.name for p in _policies.policy_params(name)}
    return _policies.make_policy(name, **({"max_messages": max_messages} if "max_messages" in takes else {}))


def start_chat(model: str | None, base_url: str | None, api_key: str | None, policy: str, max_messages: int,
               api: str = "chat-completions", server_state: bool = False):
    """A ChatSession recording to ``<recordings>/studio-<time>.jsonl``.

    With no key and no base URL (here or in the environment) it runs the
    bundled demo model in-process. The key lives only in the session object
    and is redacted from the trace by the writer.
    """
    from datetime import datetime

    from agent_core.chat.session import ChatSession

    path = recordings_dir() / f"studio-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.jsonl"
    return ChatSession.start(trace_path=path, model=model or None, base_url=base_url or None,
                             api_key=api_key or None, max_messages=max_messages,
                             policy=_make_policy(policy, max_messages), api=api, server_state=server_state)


def chat_source(session) -> Source:
    path = str(session.writer.path)
    return Source(f"chat:{path}", Path(path).name + " (chat)", "chat", path)


def chat_send(session, text: str) -> str:
    """One user turn (or ``/clear``); endpoint errors come back as text."""
    return session.handle(text)


def chat_reply_is_error(reply: str) -> bool:
    """The session answered with an endpoint error line instead of a model reply."""
    return reply.startswith("error: ")


def chat_transcript(session) -> list[dict]:
    """Every message of the chat as recorded (user turns, assistant tool calls, tool results, replies)."""
    try:
        trace = load(chat_source(session)).trace
    except LoadError:
        return []
    return [m.to_openai() for m in trace.stream]


def chat_history(session) -> list[dict]:
    """The memory as it stands (what the next call sends)."""
    return session.agent.memory.to_api_format()
