"""Two lakecompact processes on one embedded metastore: the second waits, or (--no-wait) leaves with one line.

The first process here holds the metastore the way every lakecompact process does (metastore_guard.hold,
before its JVM starts), and lets go when told: the second is a real `lakecompact` command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import ROOT, minimal_config

HOLDER = """
import sys
from pathlib import Path
from lakecompact import metastore_guard
metastore_guard.hold(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()  # until the test closes stdin
"""


def _holder(warehouse: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(warehouse / "_metastore"), "land"], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert process.stdout.readline().strip() == "held"
    return process


def _lakecompact(config: Path, *args: str, command: str = "compact") -> subprocess.Popen:
    """A command that needs the metastore (status does not: it reads files only)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lakecompact", *args, "--config", str(config), command], cwd=ROOT,
        env={**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_no_wait_exits_with_one_line_and_status_3(tmp_path):
    config = minimal_config(tmp_path)
    holder = _holder(tmp_path / "warehouse")
    try:
        started = time.monotonic()
        second = _lakecompact(config, "--no-wait")
        _, stderr = second.communicate(timeout=60)
        reader = _lakecompact(config, "--no-wait", command="status")
        read_out, read_err = reader.communicate(timeout=60)
    finally:
        holder.communicate("")
    assert (reader.returncode, read_out.strip()) == (0, "status: no tables yet"), read_err  # no JVM, no wait
    assert second.returncode == 3
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("lakecompact: error: the embedded metastore ")
    assert "is in use by " in lines[0] and f"(pid {holder.pid}, since " in lines[0]
    assert time.monotonic() - started < 30  # it did not start Spark


@pytest.mark.spark
def test_a_second_process_waits_saying_so_once_then_runs(tmp_path):
    config = minimal_config(tmp_path)
    holder = _holder(tmp_path / "warehouse")
    second = _lakecompact(config)
    try:
        waiting = second.stderr.readline()
        assert "is in use by " in waiting and "waiting for it to finish" in waiting
        assert second.poll() is None  # still waiting
    finally:
        holder.communicate("")  # the first one ends
    stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr
    assert stdout.strip() == "compact: no tables yet; run `lakecompact land` first"
    assert "waiting" not in stderr  # said once
    assert "XSDB6" not in stderr and "Another instance of Derby" not in stderr
