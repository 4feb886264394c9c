#!/usr/bin/env bash
# Fresh machine → the test suite: set up lakecompact, install the end-to-end stack (Kafka, Kafka
# Connect with Debezium, PostgreSQL, MariaDB, Spark's Kafka and Avro jars), then run pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m "not e2e"`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
if [ -x "$ROOT/scripts/stack/install.sh" ]; then
  "$ROOT/scripts/stack/install.sh"
fi
cd "$ROOT"
exec "${PYTHON:-python3}" -m pytest "$@"
