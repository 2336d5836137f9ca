""".streamlit/config.toml: every option exists in the installed Streamlit and holds an allowed value."""
from __future__ import annotations

import tomllib
from streamlit import config

from agent_core.core.paths import PROJECT_ROOT

CONFIG = PROJECT_ROOT / ".streamlit" / "config.toml"


def _options(table: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_options(value, name + "."))
        else:
            out[name] = value
    return out


def test_every_option_exists():
    options = _options(tomllib.loads(CONFIG.read_text(encoding="utf-8")))
    known = config._config_options_template
    assert [k for k in options if k not in known] == []
    assert options["server.address"] == "localhost"
    assert options["server.headless"] is True
    assert isinstance(options["server.maxUploadSize"], int) and options["server.maxUploadSize"] > 0
    assert options["client.showErrorDetails"] in ("full", "stacktrace", "type", "none")
    assert options["client.toolbarMode"] in ("auto", "developer", "viewer", "minimal")
    assert options["theme.base"] in ("light", "dark")
    assert options["theme.font"] in ("sans-serif", "serif", "monospace")
