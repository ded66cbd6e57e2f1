#!/usr/bin/env bash
# Creates .venv and installs Harvester with its dev tools; re-installs only when pyproject.toml changed.
# With --test it also makes pgTAP available to the embedded PostgreSQL (scripts/install-pgtap.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "bootstrap: Python >= 3.11 required" >&2; exit 1; }
  "$PY" -m venv .venv
fi
stamp=.venv/.harvester-installed
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python dependencies into .venv (first run takes a few minutes)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
  echo "$want" > "$stamp"
fi
if [ "${1:-}" = "--test" ]; then
  bash scripts/install-pgtap.sh
  bash scripts/install-test-tools.sh
fi
