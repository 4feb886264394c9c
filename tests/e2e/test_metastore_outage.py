"""The shared Hive metastore goes away: before a command starts, and in the middle of a compaction (a real thrift
service of the stack stopped: its spare metastore, on the same database, so that whoever else uses the stack's
metastore meanwhile, another run or a person, is not stopped with it). Each time the command waits its bounded time, then exits with one line naming
the metastore (exit 6, no traceback); once the service is back, the same command finishes the work exactly."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import lakecompact as command
from tests.support.cli import read_views
from tests.support.crash import stop_at
from tests.support.databases import database_name, lake_config
from tests.support.source import Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.alone]

TABLE = "public_items"


def one_line_outage(result: subprocess.CompletedProcess, uri: str) -> None:
    assert result.returncode == 6, result.stderr
    assert "Traceback" not in result.stderr and "at org.apache" not in result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("lakecompact: ")]
    assert error.startswith(f"lakecompact: error: the Hive metastore {uri} did not answer within 2s; last: "), error


@pytest.fixture
def spare(stack):
    """The stack's spare metastore, stopped after the test (the test starts it)."""
    yield stack.SPARE_METASTORE_URI
    stack.stop_metastore(spare=True)


def test_commands_name_a_metastore_that_is_gone_and_finish_exactly_once_it_is_back(stack, spare, tmp_path):
    import random

    uri, start, stop = spare, stack.start_metastore, stack.stop_metastore
    database = database_name()
    config = lake_config(tmp_path, database, uri, metastore_extra="connect_timeout_seconds = 2\n")
    events = tmp_path / "events"
    source = Source("outage.public.items", random.Random(7))
    positions = iter(range(95, 10_000, 3))
    deliver(events, "part-1", [line for key in range(1, 6) for _ in range(2) for line in source.change(key, next(positions))])

    try:
        stop(spare=True)
        one_line_outage(command(config, "land"), uri)  # before Spark starts: no JVM at all
        start(spare=True)
        landed = command(config, "land")
        assert landed.returncode == 0, landed.stderr

        # stopped after writing base v1's files, the metastore goes away, and the compaction goes on: its swap
        # cannot reach the metastore
        one_line_outage(stop_at(config, ("compact",), "version-written", lambda: stop(spare=True)), uri)
    finally:
        start(spare=True)

    finished = command(config, "compact")
    assert finished.returncode == 0, finished.stderr
    assert f"compact {TABLE}: base v0 -> v1:" in finished.stdout or "finishing the swap" in finished.stdout
    assert read_views(config, database, [TABLE])[TABLE] == expected_view(source.model)
    status = command(config, "status", "--json")
    [table] = [json.loads(line) for line in status.stdout.splitlines()]
    assert table["base_version"] == 1 and table["pending_batches"] == 0, table
