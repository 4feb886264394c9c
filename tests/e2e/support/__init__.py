"""Helpers of the end-to-end tests, one module per thing they drive:

- columns: column kinds and tables; the Spark type docs/design.md "Schema extractor" asks for; one canonical form of a value
- sources: the source databases (PostgreSQL, MariaDB): DDL, literals, connectors, rows read back
- workload: a seeded random workload, kept in a model of the keys and of the events it makes
- kafka: Kafka read through Spark (end offsets, whole topics) and the polled wait for Debezium's delivery
- messages: Kafka messages taken apart (envelopes, keys, positions, kinds of event, duplicates)
- lake: lakecompact run in-process (config, land, compact)
- comparison: the row-by-row comparison of the lake's view with the source table, and of the increments
  with Kafka
- fixtures: the saved fixtures (tests/fixtures/debezium) written from a run
- scenarios: the scenario of test_postgres_to_lake / test_mariadb_to_lake, and that of test_restarts
- common: unique names and progress lines

Everything is re-exported here, so that a test reads `support.X`. Nothing imports Spark or the stack at
import time: the fast test of the saved fixtures (tests/landing/test_real_debezium_fixtures.py) uses
`canonical_view_rows` and `compare_rows` too.
"""

from tests.e2e.support.columns import Column, Table, canonical, scaled, spark_type
from tests.e2e.support.common import say, unique
from tests.e2e.support.comparison import (
    Comparison,
    assert_equal,
    canonical_view_rows,
    compare_rows,
    compare_with_source,
    increments_landed_once,
    row_json,
)
from tests.e2e.support.fixtures import FIXTURES, SAVE_FIXTURES_ENV, save_fixture
from tests.e2e.support.kafka import DELIVERY_TIMEOUT, end_offsets, read_messages, wait_delivered
from tests.e2e.support.lake import check_session, compact, jvm_cpu_seconds, lake_config, land
from tests.e2e.support.messages import PLACEHOLDER, duplicates, envelope, message_key, op_counts, position
from tests.e2e.support.scenarios import (
    INITIAL_ROWS,
    MAX_EVENTS_PER_BATCH,
    Restarts,
    Scenario,
    Writer,
    crash_after_commit,
    crash_landing_mid_batch,
    expected_events,
    kill_connect_mid_workload,
    land_names_table,
    landed_positions,
    restarts_scenario,
    snapshot_and_connect,
    source_to_lake,
    write_phase,
)
from tests.e2e.support.sources import MariaDb, Postgres, SourceDb, maria_type, pg_type
from tests.e2e.support.workload import (
    ADDED_COLUMNS,
    TABLES,
    WEIGHTS,
    TableModel,
    Workload,
    accounts_table,
    audit_table,
    names_table,
    orders_table,
)

__all__ = [
    "ADDED_COLUMNS", "DELIVERY_TIMEOUT", "FIXTURES", "INITIAL_ROWS", "MAX_EVENTS_PER_BATCH", "PLACEHOLDER",
    "SAVE_FIXTURES_ENV", "TABLES", "WEIGHTS", "Column", "Comparison", "MariaDb", "Postgres", "Restarts", "Scenario",
    "SourceDb", "Table", "TableModel", "Workload", "Writer", "accounts_table", "assert_equal", "audit_table",
    "canonical", "canonical_view_rows", "check_session", "compact", "compare_rows", "compare_with_source",
    "crash_after_commit", "crash_landing_mid_batch", "duplicates", "end_offsets", "envelope", "expected_events",
    "increments_landed_once", "jvm_cpu_seconds", "kill_connect_mid_workload", "lake_config", "land",
    "land_names_table", "landed_positions", "maria_type", "message_key", "names_table", "op_counts", "orders_table",
    "pg_type", "position", "read_messages", "restarts_scenario", "row_json", "save_fixture", "say", "scaled",
    "snapshot_and_connect", "source_to_lake", "spark_type", "unique", "wait_delivered", "write_phase",
]
