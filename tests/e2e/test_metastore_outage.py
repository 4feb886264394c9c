"""The shared Hive metastore goes away: before a command starts, and in the middle of a compaction (the stack's
real thrift service stopped). Each time the command waits its bounded time, then exits with one line naming
the metastore (exit 6, no traceback); once the service is back, the same command finishes the work exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.semantics.reference import expected_view
from tests.support.databases import database_name
from tests.test_cli import ROOT
from tests.test_cli import lakecompact as command
from tests.test_run import Source, deliver, read_views, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLE = "public_items"


def one_line_outage(result: subprocess.CompletedProcess, uri: str) -> None:
    assert result.returncode == 6, result.stderr
    assert "Traceback" not in result.stderr and "at org.apache" not in result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("lakecompact: ")]
    assert error.startswith(f"lakecompact: error: the Hive metastore {uri} did not answer within 2s; last: "), error


def stopped(process: subprocess.Popen) -> bool:
    """The process stopped itself (SIGSTOP) at its stop point."""
    if process.poll() is not None:
        raise AssertionError(f"exited {process.returncode} before its stop point: {process.communicate()}")
    return Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_commands_name_a_metastore_that_is_gone_and_finish_exactly_once_it_is_back(stack, tmp_path):
    import random

    database = database_name()
    config = tmp_path / "lakecompact.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\ndatabase = "{database}"\n'
        f'[source]\nkind = "files"\npaths = ["{tmp_path / "events"}/*.jsonl"]\n'
        f'[metastore]\nuri = "{stack.METASTORE_URI}"\nconnect_timeout_seconds = 2\n'
        '[defaults]\nbuckets = 2\n[spark.conf]\n"spark.sql.shuffle.partitions" = "2"\n'
    )
    events = tmp_path / "events"
    events.mkdir()
    source = Source("outage.public.items", random.Random(7))
    positions = iter(range(95, 10_000, 3))
    deliver(events, "part-1", [line for key in range(1, 6) for _ in range(2) for line in source.change(key, next(positions))])

    try:
        stack.stop_metastore()
        one_line_outage(command(config, "land"), stack.METASTORE_URI)  # before Spark starts: no JVM at all
        stack.start_metastore()
        landed = command(config, "land")
        assert landed.returncode == 0, landed.stderr

        # stopped after writing base v1's files, the metastore goes away, and the compaction goes on: its swap
        # cannot reach the metastore
        env = {**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR", "LAKECOMPACT_STOP_AT": "version-written"}
        compactor = subprocess.Popen([sys.executable, "-m", "lakecompact", "--config", str(config), "compact"],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: stopped(compactor), "the compactor at its stop point", compactor, timeout=300)
            stack.stop_metastore()
            os.kill(compactor.pid, signal.SIGCONT)
            out, err = compactor.communicate(timeout=300)
        finally:
            if compactor.poll() is None:
                os.kill(compactor.pid, signal.SIGCONT)
                compactor.kill()
                compactor.communicate()
        one_line_outage(subprocess.CompletedProcess(compactor.args, compactor.returncode, out, err),
                        stack.METASTORE_URI)
    finally:
        stack.start_metastore()

    finished = command(config, "compact")
    assert finished.returncode == 0, finished.stderr
    assert f"compact {TABLE}: base v0 -> v1:" in finished.stdout or "finishing the swap" in finished.stdout
    assert read_views(config, database, [TABLE])[TABLE] == expected_view(source.model)
    status = command(config, "status", "--json")
    [table] = [json.loads(line) for line in status.stdout.splitlines()]
    assert table["base_version"] == 1 and table["pending_batches"] == 0, table
