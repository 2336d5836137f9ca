"""The studio judges a trace by its own provider's profile until the user picks one, and says which judged it.

An Anthropic Messages body is judged by ``anthropic``, a Gemini body by ``gemini``, a Chat Completions one by
``openai`` (the CLI's ``lint`` default, cli/lint.py); a profile the user picks stays, whatever trace is open.
"""
from __future__ import annotations

from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any
from studio.viewmodels import verdicts as vm

CHAINS = PROJECT_ROOT / "tests" / "fixtures" / "verdicts"


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_each_trace_opens_judged_by_its_own_provider(open_studio):
    for name, native in (("gemini_history_starts_with_call.json", "gemini"),
                         ("anthropic_thinking_dropped.json", "anthropic"), ("cc_trimmed_orphan.json", "openai")):
        at = open_studio(CHAINS / name, "screens/lint.py")
        assert at.selectbox(key="lint_profile").value == native, name
        assert any(c.startswith(f"Judged by the {native} profile: the trace's own provider") for c in _captions(at))
    # the Gemini chain's own rule and Gemini's exact text, not OpenAI's (google-gemini/gemini-cli#11814)
    at = open_studio(CHAINS / "gemini_history_starts_with_call.json", "screens/lint.py")
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption) + " ".join(
        str(e.value) for e in at.code)
    assert ("Please ensure that function call turn comes immediately after a user turn or after a function response "
            "turn.") in shown


def test_a_picked_profile_stays_and_the_page_says_it_was_picked(open_studio):
    at = open_studio(CHAINS / "gemini_history_starts_with_call.json", "screens/lint.py")
    at.selectbox(key="lint_profile").set_value("mistral").run()
    assert not at.exception
    assert at.selectbox(key="lint_profile").value == "mistral"
    assert "Judged by the mistral profile, which you picked; the trace's own provider is gemini." in _captions(at)
    at.switch_page("screens/timeline.py").run()
    at.switch_page("screens/lint.py").run()
    assert at.selectbox(key="lint_profile").value == "mistral"


def test_profile_note_names_the_profile_and_why():
    assert vm.profile_note("gemini", "gemini", chosen=False)[0].startswith(
        "Judged by the gemini profile: the trace's own provider")
    assert vm.profile_note("openai", "anthropic", chosen=True)[0] == (
        "Judged by the openai profile, which you picked; the trace's own provider is anthropic.")
    assert vm.profile_note("gemini", "gemini", chosen=True)[0].endswith("it is also the trace's own provider.")
    assert all(zh for _, zh in (vm.profile_note("a", "a", False), vm.profile_note("a", "b", True)))


def test_r1_row_shows_the_documented_sentence_labelled_not_as_an_error_text():
    rows = {r["provider"]: r for r in vm.trace_matrix(load_any(CHAINS / "cc_deepseek_r1_chat.json"))}
    assert rows["deepseek"]["verdict"] == "accepted"
    r1 = rows["deepseek-r1"]
    assert r1["verdict"] == "rejected" and r1["rule"] == "reasoning-content-in-input"
    assert r1["text"].startswith("(no error body is documented; the provider's docs say: \"Please note that if the "
                                 "reasoning_content field is included in the sequence of input messages, the API "
                                 "will return a 400 error.")


def test_the_replay_page_says_which_profile_judged_its_rejections(open_studio):
    at = open_studio(CHAINS / "anthropic_unanswered_tool_use.json", "screens/replay.py")
    assert any(c.startswith("Judged by the anthropic profile: the trace's own provider") for c in _captions(at))
