"""Hostile inputs from ``tests/fixtures/hostile_inputs.py`` on every studio page: no uncaught exception; a
refusal or a malformed message is shown as one sentence and the page renders the rest."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import visit_every_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import hostile_inputs

NAMES = [
    "request/messages.1.role=obj", "request/messages.1.role=list", "request/messages.2.tool_calls=int",
    "request/messages.3.tool_call_id=list", "request/messages.1.content=surrogate", "file/surrogate-everywhere",
    "file/markup-everywhere", "trace/header.meta=str", "trace/line3.value.tool_calls=bool",
    "payload-log/response.choices.0.message.tool_calls=neg", "file/nan-literals", "file/bigint-top",
]
BY_NAME = {i.name: i for i in hostile_inputs.generate()}


@pytest.mark.parametrize("name", NAMES)
def test_every_page_survives_a_hostile_input(open_studio, tmp_path, name):
    path = hostile_inputs.materialise(BY_NAME[name], tmp_path)
    at = open_studio(path)
    visit_every_page(at)
