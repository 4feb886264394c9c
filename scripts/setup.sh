#!/usr/bin/env bash
# Install what lakecompact needs to run: Java (Debian package) and the Python package with its
# dependencies. Does nothing that is already done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v java >/dev/null 2>&1; then
  echo "setup: installing a Java runtime (openjdk-17-jre-headless)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
else
  echo "setup: java present ($(java -version 2>&1 | head -1))"
fi

if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "setup: error: lakecompact needs Python 3.11 or newer, found $("$PYTHON" --version 2>&1)" >&2
  exit 1
fi

installed_here() {
  # from / so that the checkout's own folder on sys.path does not count as installed
  (cd / && "$PYTHON" - "$ROOT" <<'PY' 2>/dev/null
import sys, pathlib
import lakecompact, pyspark, sqlglot, jinja2, avro, requests, pytest, xdist, hypothesis, prometheus_client, matplotlib, botocore  # noqa: F401
import setuptools.command.bdist_wheel  # noqa: F401  (setuptools >= 70.1: the tests build the wheel)
sys.exit(0 if pathlib.Path(list(lakecompact.__path__)[0]).resolve().is_relative_to(pathlib.Path(sys.argv[1]).resolve()) else 1)
PY
  )
}

if installed_here; then
  echo "setup: lakecompact and its Python dependencies already installed from $ROOT"
else
  echo "setup: pip install -e $ROOT[dev]"
  "$PYTHON" -m pip install -q -e "$ROOT[dev]"
fi

# a class archive the JVM maps at every start: seconds off each command (lakecompact/class_archive.py)
"$PYTHON" -m lakecompact class-archive 2>&1 | sed 's/^/setup: /' || echo "setup: no class archive; commands start slower"
