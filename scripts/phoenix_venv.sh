#!/usr/bin/env bash
# A real Arize Phoenix server, in its own virtualenv, for tests/agent_core/test_phoenix.py (the OTLP exporter
# and `chain-studio open URL` are tested against it). Its own venv because arize-phoenix would move packages
# the project uses (it pins anthropic<2 and python-dateutil<3; `pip install --dry-run arize-phoenix` shows it).
# Needs the package registry; the tests themselves run offline. Idempotent.
#   CHAIN_STUDIO_PHOENIX_VENV  where (default ~/.cache/chain-studio/phoenix-venv; the test reads the same)
#   PYTHON                     the interpreter to build it from (default python3)
set -euo pipefail
version="20.26.1"
dir="${CHAIN_STUDIO_PHOENIX_VENV:-$HOME/.cache/chain-studio/phoenix-venv}"
if "$dir/bin/python" -c "import sys, phoenix.version as v; sys.exit(v.__version__ != '$version')" 2>/dev/null; then
  echo "phoenix_venv: arize-phoenix $version already in $dir"
  exit 0
fi
# While this runs, "$dir.installing" exists: the test waits for it to go (.ci/run installs in the background).
mkdir -p "$(dirname "$dir")"
touch "$dir.installing"
trap 'rm -f "$dir.installing"' EXIT
"${PYTHON:-python3}" -m venv "$dir"
"$dir/bin/python" -m pip install -q --disable-pip-version-check "arize-phoenix==$version"
echo "phoenix_venv: arize-phoenix $version installed in $dir"
