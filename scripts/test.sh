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
# Three pytest-xdist workers, each with its own Spark session: the end-to-end tests on one of them, one after
# the other (they start, stop and kill the stack's services), from the start, since they are the longest share;
# the other tests beside them on two more, a file's tests on one worker (tests/conftest.py:
# pytest_xdist_make_scheduler). LAKECOMPACT_TEST_WORKERS=0: everything in one process.
workers="${LAKECOMPACT_TEST_WORKERS:-3}"
if [ "$workers" = 0 ]; then
  exec "${PYTHON:-python3}" -m pytest "$@"
fi
exec "${PYTHON:-python3}" -m pytest -n "$workers" --dist loadfile "$@"
