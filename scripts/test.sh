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
# Two parts. The tests without the end-to-end ones run on two pytest-xdist workers, each with its own Spark
# session (one test's Spark jobs are too small to keep both cores busy), a file's
# tests on one worker. Then the end-to-end tests, in one process: they stop and start the stack's services
# (the metastore among them), which the other tests use. LAKECOMPACT_TEST_WORKERS=0: the first part in one
# process too. Both parts run; the exit code is the first failing part's (5, no test selected, is not a failure
# unless no part selected any).
status=5
for part in "-n ${LAKECOMPACT_TEST_WORKERS:-2} --dist loadfile --e2e skip" "--e2e only"; do
  # shellcheck disable=SC2086  # $part is a list of options
  "${PYTHON:-python3}" -m pytest $part "$@" && code=0 || code=$?
  if [ "$code" != 5 ] && { [ "$status" = 0 ] || [ "$status" = 5 ]; }; then
    status=$code
  fi
done
exit "$status"
