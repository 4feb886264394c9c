"""A JDBC client reads a deduplicated view: Spark's Thrift JDBC/ODBC server (HiveServer2 protocol, shipped with
Spark) runs on the stack's shared Hive metastore (`stack.py up thriftserver`), and beeline, Hive's JDBC
command-line client, queries the view lakecompact made, while increments are pending on top of a base version.
The rows are the source's, each key once; the documented as-of query over the table's row history
(`<t>_history`) gives the source's rows at each moment of its history."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import lakecompact as command
from tests.support.databases import database_name, lake_config
from tests.support.source import SOURCE_EPOCH_MS, Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLE = "public_items"


def test_beeline_reads_the_view_through_the_thrift_server(stack, tmp_path):
    started = not stack.status()["thriftserver"]["ready"]
    stack.up(components=["thriftserver"])
    try:
        database = database_name()
        config = lake_config(tmp_path, database, stack.METASTORE_URI, extra="row_history = true\n")
        source = Source("jdbc.public.items", random.Random(5))
        positions = iter(range(95, 10_000, 3))
        deliver(tmp_path / "events", "part-1", [line for key in range(1, 9) for _ in range(2)
                                                for line in source.change(key, next(positions))])
        for step in ("land", "compact"):
            assert command(config, step).returncode == 0
        # pending on top of base v1: late, redelivered and new changes the view resolves at read time
        deliver(tmp_path / "events", "part-2", [line for key in (2, 3, 5, 9, 10) for line in source.change(key, next(positions))])
        landed = command(config, "land")
        assert landed.returncode == 0, landed.stderr

        rows = stack.beeline(f"SELECT id, note, qty FROM `{database}`.{TABLE} ORDER BY id")
        seen = {int(i): {"id": int(i), "note": note, "qty": int(qty)} for i, note, qty in rows}
        assert len(seen) == len(rows)  # each key once
        assert seen == expected_view(source.model)
        [[pending]] = stack.beeline(f"SELECT count(*) FROM `{database}`.{TABLE}_increments")
        assert int(pending) > 0  # the view read pending increments, not only the base

        positions = sorted(event["position"] for event in source.model)
        for position in positions[::4] + [positions[-1]]:
            moment = datetime.fromtimestamp((SOURCE_EPOCH_MS + position) / 1000, UTC)
            literal = f"TIMESTAMP '{moment:%Y-%m-%d %H:%M:%S.%f}'"  # the server's session time zone is UTC
            rows = stack.beeline(f"SELECT id, note, qty FROM `{database}`.{TABLE}_history WHERE __valid_from <= "
                                 f"{literal} AND (__valid_to IS NULL OR {literal} < __valid_to) ORDER BY id")
            as_of = {int(i): {"id": int(i), "note": note, "qty": int(qty)} for i, note, qty in rows}
            assert len(as_of) == len(rows)
            assert as_of == expected_view([event for event in source.model if event["position"] <= position]), position
    finally:
        if started:
            stack.down(["thriftserver"])
