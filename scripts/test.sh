#!/usr/bin/env bash
# Fresh machine → the test suite: set up lakecompact, install the end-to-end stack (Kafka, Kafka
# Connect with Debezium, PostgreSQL, MariaDB, a Hive metastore, Spark's Kafka and Avro jars), then run pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m "not e2e"`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
if [ -x "$ROOT/scripts/stack/install.sh" ]; then
  "$ROOT/scripts/stack/install.sh"
fi
cd "$ROOT"
# The in-process tests run against the stack's Hive metastore (thrift, PostgreSQL), as production does; the
# tests that start lakecompact processes keep the embedded default unless they say otherwise. Set it empty
# (LAKECOMPACT_TEST_METASTORE= scripts/test.sh) for the embedded metastore throughout.
if [ -x "$ROOT/scripts/stack/install.sh" ]; then
  export LAKECOMPACT_TEST_METASTORE="${LAKECOMPACT_TEST_METASTORE-stack}"
fi
exec "${PYTHON:-python3}" -m pytest "$@"
