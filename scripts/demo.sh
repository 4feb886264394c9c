#!/usr/bin/env bash
# Fresh machine → the demo: set up, then land, compact and query the events in examples/events/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "${PYTHON:-python3}" -m lakecompact demo "$@"
