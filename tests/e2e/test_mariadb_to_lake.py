"""MariaDB → Debezium → Kafka → `lakecompact land` (Kafka source) → compact: the view equals the table.

The scenario of test_postgres_to_lake, in a MariaDB database of its own (row-based binlog, full row images):
`accounts` (primary key; DECIMAL(12,2) and DECIMAL(30,10), DATE, DATETIME(6), TIMESTAMP(6) written in a
+02:00 session and expected in UTC, BOOLEAN (= TINYINT(1), which Debezium sends as INT16), BIT(1) (a Connect
boolean), DOUBLE, a ~10 KB MEDIUMTEXT), `orders` (composite primary key, DATETIME(3), a primary-key change)
and `audit` (no primary key: insert-only, as an update would be a new row of an append-only table). Snapshot,
seeded random workload with a multi-statement transaction and one added column per keyed table; land,
compact, compare; land, compare, compact, compare, row by row. Set LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES=1 to
rewrite tests/fixtures/debezium/mariadb.* from this run.
"""

from __future__ import annotations

from tests.e2e import support
from tests.e2e.source_to_lake import SourceToLake


class TestMariaDbToLake(SourceToLake):
    database, name, seed = support.MariaDb, "maria", 20260416
