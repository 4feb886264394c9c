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
# Three parts. The tests without the end-to-end ones run on two pytest-xdist workers, each with its own Spark
# session (one test's Spark jobs are too small to keep both cores busy), a file's tests on one worker. Then the
# end-to-end tests that share the stack, on two workers too: most of their time is waiting on services, and the
# run brings the whole stack up first, so that no test stops what another uses (a file on one worker; the files
# of the Spark cluster, which kill its workers, all on one: tests/conftest.py's scheduler). Last, those that
# stop or kill a service the others use (marked `alone`), in one process. LAKECOMPACT_TEST_WORKERS=0: each part
# in one process. Every part runs; the exit code is the first failing part's (5, no test selected, is not a
# failure unless no part selected any).
workers="${LAKECOMPACT_TEST_WORKERS:-2}"
status=5
for part in "-n $workers --dist loadfile --e2e skip" "-n $workers --dist loadfile --e2e together" "--e2e alone"; do
  # shellcheck disable=SC2086  # $part is a list of options
  "${PYTHON:-python3}" -m pytest $part "$@" && code=0 || code=$?
  if [ "$code" != 5 ] && { [ "$status" = 0 ] || [ "$status" = 5 ]; }; then
    status=$code
  fi
done
exit "$status"
