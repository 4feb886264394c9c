"""Trino reads the deduplicated tables: a Trino server (`stack.py up trino`, Trino 476, the newest release on
Maven Central as this machine reaches it, on Java 25 of its own) whose Hive connector reads the stack's shared
metastore runs the view `lakecompact views --dialect trino` prints, over the base and the increments that
lakecompact wrote. After a history with late events, deletes and TOAST placeholders, its rows are the source's
and Spark's, while increments are pending on a base version and after they are compacted into merge-on-read
deltas."""

from __future__ import annotations

import json
import random

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import lakecompact as command
from tests.support.cli import sql_lines
from tests.support.databases import database_name, lake_config
from tests.support.source import Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLE = "public_items"


def test_trino_reads_the_trino_view_as_spark_reads_its_own(stack, tmp_path):
    started = not stack.status()["trino"]["ready"]
    stack.up(components=["trino"])
    database = database_name()
    views = f"{database}_trino"  # beside the Spark views, which Trino's own would replace
    try:
        # merge-on-read, with deltas however large: after the second compaction Trino reads keys from the deltas
        config = lake_config(tmp_path, database, stack.METASTORE_URI, extra="merge_on_read = true\ndelta_share = 1e9\n")
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
        stack.trino(f"CREATE SCHEMA IF NOT EXISTS {views}")
        stack.trino(printed.stdout.strip().rstrip(";"))

        query = "SELECT id, note, qty FROM {} ORDER BY id"
        model = expected_view(source.model)
        [[pending]] = [list(r.values()) for r in stack.trino(f"SELECT count(*) FROM {database}.{TABLE}_increments")]
        assert pending > 0  # Trino resolves pending increments on the base, not only the base
        for moment in ("increments pending on base v1", "everything compacted"):
            via_trino = stack.trino(query.format(f"{views}.{TABLE}"))
            via_spark = [json.loads(line) for line in sql_lines(config, query.format(f"{database}.{TABLE}"))]
            assert len({row["id"] for row in via_trino}) == len(via_trino), moment  # each key once
            assert {row["id"]: row for row in via_trino} == model, moment
            assert via_trino == [{k: row.get(k) for k in ("id", "note", "qty")} for row in via_spark], moment
            assert command(config, "compact").returncode == 0
        manifest = tmp_path / "warehouse" / database / TABLE / "_state" / "manifests" / f"{2:012d}.json"
        assert json.loads(manifest.read_text())["stats"]["deltas_written"]  # the compacted moment read deltas
        stack.trino(f"DROP VIEW {views}.{TABLE}")
        stack.trino(f"DROP SCHEMA {views}")
    finally:
        if started:
            stack.down(["trino"])

