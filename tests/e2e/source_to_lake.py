"""The checks test_postgres_to_lake and test_mariadb_to_lake share: a class each of those modules subclasses
with its database (and seed), so that pytest runs them there, against that database's scenario. The class
name does not start with `Test`, so it is not collected here."""

from __future__ import annotations

import pytest

from tests.e2e import support


@pytest.mark.e2e
class SourceToLake:
    """One database's scenario (support.source_to_lake), run once for the class, and its checks."""

    database: type[support.SourceDb]  # Postgres or MariaDb
    name: str  # names the namespace (e2e_<name>_…) and the temporary folder
    seed: int
    latest_lake = names_table = False  # the options of support.source_to_lake
    needed_events = ("r", "c", "u", "d", "tombstone")  # every kind of event the workload must make Debezium send

    @pytest.fixture(scope="class")
    def scenario(self, stack, spark, e2e_spark, tmp_path_factory):
        session = support.check_session(spark, e2e_spark)
        db = self.database(stack, support.unique(f"e2e_{self.name}"))
        return support.source_to_lake(session, stack, db, tmp_path_factory.mktemp(self.name), self.seed,
                                      latest_lake=self.latest_lake, names_table=self.names_table)

    def test_tables_with_a_key_equal_the_source_after_each_step(self, scenario):
        assert support.assert_equal(scenario.comparisons, keyed=True) > 0

    def test_table_without_a_key_equals_the_source_after_each_step(self, scenario):
        """Append-only: every insert is a row, rows equal in every column too (in one batch, and one repeating a
        row of the first batch in the second)."""
        assert scenario.workload.copies_of_earlier_rows, "the workload copied no row of an earlier batch"
        assert support.assert_equal(scenario.comparisons, keyed=False) > 0

    def test_as_of_each_recorded_moment_equals_what_the_source_held_then(self, scenario):
        """Row history: the source's tables and clock read in one transaction after the snapshot and after each
        phase of writes; `sql --as-of` at each moment, with the increments pending and after the compaction that
        folds them in, equals what the source held then (the columns it had then)."""
        comparisons = scenario.extra["as_of"]
        assert len({c.stage for c in comparisons}) == 6, sorted({c.stage for c in comparisons})
        assert support.assert_equal(comparisons, keyed=True) > 0

    def test_debezium_sent_every_kind_of_event(self, scenario):
        ops = support.op_counts(scenario.messages)
        for needed in self.needed_events:
            assert ops[needed] > 0, f"the workload made no {needed!r} events: {dict(ops)}"
        support.say(f"{scenario.db.kind} events: {dict(ops)}")

    def test_verify_finds_the_lake_equal_to_the_source(self, scenario):
        """`verify` (JDBC read of the source, per-bucket checksums) on the lake the pipeline built: nothing differs."""
        assert scenario.extra["verify"].equal == {table: {} for table in scenario.extra["verify"].expected}

    def test_verify_while_writes_keep_running_reports_nothing_in_flight_as_different(self, scenario):
        """verify while the source is written and the lake lands: the lake was behind when verify read it (buckets
        differed), and once it landed past the source position of the read nothing is reported."""
        live = scenario.extra["verify"].while_writing
        assert {table: v["found"] for table, v in live.items()} == {table: {} for table in live}
        assert sum(v["differing_buckets"] for v in live.values()) > 0, f"the lake was never behind: {live}"

    def test_verify_finds_exactly_the_keys_changed_behind_the_connector(self, scenario):
        """Changes at the source the lake never saw: verify names each key by kind (and the column that differs),
        and nothing else; they are in <t>_verify."""
        outcome = scenario.extra["verify"]
        assert outcome.damaged == {
            table: {kind: sum(1 for k, _, _ in expected if k == kind) for kind, _, _ in expected}
            for table, expected in outcome.expected.items()}
        assert outcome.differences == outcome.expected

    def test_repair_then_land_and_compact_make_the_keyed_tables_equal_again(self, scenario):
        """`repair` asks a connector made again without a snapshot for the divergent keys (an incremental snapshot
        signalled in its signalling table) and gives the statement that deletes the key the source lost; after
        land and compact, verify finds every keyed table equal. The keyless table's row cannot be named: it stays."""
        outcome = scenario.extra["verify"]
        assert outcome.repaired == {table: ({"missing in the lake": 1} if table.endswith("_audit") else {})
                                    for table in outcome.expected}

    def test_every_event_landed_exactly_once(self, scenario):
        events = sum(1 for m in scenario.messages if m["payload"] is not None and m["topic"] in scenario.topics)
        assert scenario.landed == events > 0
