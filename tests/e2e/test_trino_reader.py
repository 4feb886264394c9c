"""Trino reads the deduplicated tables: a Trino server (`stack.py up trino`, Trino 476, the newest release on
Maven Central as this machine reaches it, on Java 25 of its own) whose Hive connector reads the stack's shared
metastore runs the view `lakecompact views --dialect trino` prints, over the base and the increments that
lakecompact wrote. After a history with late events, deletes and TOAST placeholders, its rows are the source's
and Spark's, while increments are pending on a base version and after they are compacted into merge-on-read
deltas. The table keeps its row history (`row_history`): Trino's form of `<t>_history` holds the versions Spark's
holds, to the microsecond, and the documented as-of query in Trino gives the source's rows at each moment."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import lakecompact as command
from tests.support.cli import sql_lines
from tests.support.databases import database_name, lake_config
from tests.support.source import SOURCE_EPOCH_MS, Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLE = "public_items"


def test_trino_reads_the_trino_view_as_spark_reads_its_own(stack, tmp_path):
    started = not stack.status()["trino"]["ready"]
    stack.up(components=["trino"])
    database = database_name()
    views = f"{database}_trino"  # beside the Spark views, which Trino's own would replace
    try:
        # merge-on-read, with deltas however large: after the second compaction Trino reads keys from the deltas
        config = lake_config(tmp_path, database, stack.METASTORE_URI,
                             extra="merge_on_read = true\ndelta_share = 1e9\nrow_history = true\n")
        rng = random.Random(11)
        source = Source("trino.public.items", rng)
        history = [line for position in range(100, 400, 3) for line in source.change(rng.randint(1, 12), position)]
        # a third of the history arrives late, with the second delivery: older than what is in the base by then
        late = set(rng.sample(range(len(history)), len(history) // 3))
        first = [line for n, line in enumerate(history[:70]) if n not in late]
        second = [line for n, line in enumerate(history) if n >= 70 or n in late]
        deliver(tmp_path / "events", "part-1", first)
        for step in ("land", "compact"):
            assert command(config, step).returncode == 0
        deliver(tmp_path / "events", "part-2", second)
        assert command(config, "land").returncode == 0

        printed = command(config, "views", "--dialect", "trino", "--database", views, "--table", TABLE)
        assert printed.returncode == 0, printed.stderr
        statements = [text.strip() for text in printed.stdout.split(";\n") if text.strip()]
        assert [s.splitlines()[0] for s in statements] == [f"CREATE OR REPLACE VIEW {views}.{name} AS"
                                                           for name in (TABLE, f"{TABLE}_history")]
        stack.trino_query(f"CREATE SCHEMA IF NOT EXISTS {views}")
        for statement in statements:
            stack.trino_query(statement)

        query = "SELECT id, note, qty FROM {} ORDER BY id"
        model = expected_view(source.model)
        [[pending]] = [list(r.values()) for r in stack.trino_query(f"SELECT count(*) FROM {database}.{TABLE}_increments")]
        assert pending > 0  # Trino resolves pending increments on the base, not only the base
        for moment in ("increments pending on base v1", "everything compacted"):
            via_trino = stack.trino_query(query.format(f"{views}.{TABLE}"))
            via_spark = [json.loads(line) for line in sql_lines(config, query.format(f"{database}.{TABLE}"))]
            assert len({row["id"] for row in via_trino}) == len(via_trino), moment  # each key once
            assert {row["id"]: row for row in via_trino} == model, moment
            assert via_trino == [{k: row.get(k) for k in ("id", "note", "qty")} for row in via_spark], moment
            check_history(stack, config, f"{views}.{TABLE}_history", f"{database}.{TABLE}_history", source.model)
            assert command(config, "compact").returncode == 0
        manifest = tmp_path / "warehouse" / database / TABLE / "_state" / "manifests" / f"{2:012d}.json"
        assert json.loads(manifest.read_text())["stats"]["deltas_written"]  # the compacted moment read deltas
        stack.trino_query(f"DROP VIEW {views}.{TABLE}")
        stack.trino_query(f"DROP VIEW {views}.{TABLE}_history")
        stack.trino_query(f"DROP SCHEMA {views}")
    finally:
        if started:
            stack.down(["trino"])



def check_history(stack, config, trino_history: str, spark_history: str, model: list[dict]) -> None:
    """Trino's `<t>_history` holds Spark's versions, to the microsecond, and its as-of query gives the source's rows
    (each change's source time is its position in ms after SOURCE_EPOCH_MS)."""
    columns = ("id", "note", "qty", "{f}", "{t}", "CAST(__position AS BIGINT) AS position", "__op")
    # to_unixtime's double is within a quarter of a microsecond here: rounded, it is exact
    in_trino = ", ".join(columns).format(f="CAST(round(to_unixtime(__valid_from) * 1e6) AS BIGINT) AS valid_from",
                                         t="CAST(round(to_unixtime(__valid_to) * 1e6) AS BIGINT) AS valid_to")
    in_spark = ", ".join(columns).format(f="unix_micros(__valid_from) AS valid_from",
                                         t="unix_micros(__valid_to) AS valid_to")
    order = " ORDER BY id, position"
    via_trino = stack.trino_query(f"SELECT {in_trino} FROM {trino_history}{order}")
    via_spark = [json.loads(line) for line in sql_lines(config, f"SELECT {in_spark} FROM {spark_history}{order}")]
    assert len(via_trino) > len({row["id"] for row in via_trino}) > 0  # keys with more than one version
    assert via_trino == [{**row, "valid_to": row.get("valid_to"), "note": row.get("note"),
                          "qty": row.get("qty")} for row in via_spark]
    positions = sorted({event["position"] for event in model})
    for position in positions[::7] + [positions[-1]]:
        moment = datetime.fromtimestamp((SOURCE_EPOCH_MS + position) / 1000, UTC)
        literal = f"TIMESTAMP '{moment:%Y-%m-%d %H:%M:%S.%f} UTC'"
        as_of = stack.trino_query(f"SELECT id, note, qty FROM {trino_history} WHERE __valid_from <= {literal} AND "
                            f"(__valid_to IS NULL OR {literal} < __valid_to) ORDER BY id")
        expected = expected_view([event for event in model if event["position"] <= position])
        assert {row["id"]: row for row in as_of} == expected, position
        assert len(as_of) == len(expected)
