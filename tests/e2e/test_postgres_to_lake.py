"""PostgreSQL → Debezium → Kafka → `lakecompact land` (Kafka source) → compact: the view equals the table.

Tables in a schema of their own: `accounts` (primary key; numeric(12,2) and numeric(30,10), date,
timestamp(6), timestamptz, boolean, double, and a ~10 KB TEXT column kept out of line by TOAST under REPLICA
IDENTITY DEFAULT, which updates that leave it alone send as `__debezium_unavailable_value`), `orders`
(composite primary key, timestamp(3), a primary-key change) and `audit` (no primary key: insert-only, as
PostgreSQL refuses updates of such a table under a publication; some rows equal in every column). Rows exist
before the connector starts (the snapshot, op r); then a seeded random workload: inserts, updates, deletes,
re-inserts of deleted keys, one transaction that updates a key several times, one column added to `accounts`
halfway through the first phase and one to `orders` in the second. Land, compact, compare; more workload,
land, compare (base + pending increments), compact, compare: row by row, column by column, and the column
types docs/design.md "Schema extractor" asks for. The counts compared are printed.

Also from the same run: a second lake with starting_offsets = "latest" and a topic pattern lands exactly what
arrived after its first run, and a table with columns named `key` and `payload` lands like any other.
Set LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES=1 to rewrite tests/fixtures/debezium/postgres.* from this run.
"""

from __future__ import annotations

from tests.e2e import support
from tests.e2e.source_to_lake import SourceToLake


class TestPostgresToLake(SourceToLake):
    database, name, seed = support.Postgres, "pg", 20260415
    latest_lake = names_table = True
    needed_events = (*SourceToLake.needed_events, "toast placeholder")

    def test_starting_offsets_latest_starts_at_the_end_then_takes_all_that_came_after(self, scenario):
        """A lake with starting_offsets = "latest" (and a topic pattern, and a Kafka client option): its first run
        lands nothing but records where each partition ended; its next run takes everything from there."""
        extra = scenario.extra
        assert extra["latest_first_run"] == 0
        start = {f"{topic}:0": offset for topic, offset in extra["latest_start"].items()}
        assert extra["latest_recorded"] == start
        end = {f"{topic}:0": offset for topic, offset in extra["latest_end"].items()}
        assert extra["latest_next_plan"] == {name: {"start": start[name], "end": end[name]} for name in end}
        assert end and all(end[name] > start[name] for name in end), end

    def test_columns_named_key_and_payload(self, scenario):
        outcome = scenario.extra["names"]
        assert not isinstance(outcome, str), outcome
        support.assert_equal([outcome])
