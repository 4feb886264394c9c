"""kill -9 inside the commit protocols: a real `lakecompact` process killed (SIGKILL) right after a named step,
then the same command run again: the view is exact, nothing is visible twice, nothing is left behind.

Every step can be killed at (LAKECOMPACT_KILL_AT=<step>, lakecompact/crashpoints.py); each process start
costs a JVM, so the suite kills at one step of each protocol where the most is half done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lakecompact.crashpoints import STEPS
from tests.support.debezium import INT, TEXT, Topic, write_kcat
from tests.test_cli import ROOT, minimal_config

pytestmark = pytest.mark.spark

ITEMS = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])


def run(config: Path, *args: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR"}
    env.pop("LAKECOMPACT_KILL_AT", None)
    if kill_at:
        env["LAKECOMPACT_KILL_AT"] = kill_at
    return subprocess.run([sys.executable, "-m", "lakecompact", "--config", str(config), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def view(config: Path) -> dict[int, str]:
    result = run(config, "sql", "SELECT id, name FROM lake.public_items")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == len({r["id"] for r in rows}), rows  # nothing visible twice
    return {r["id"]: r.get("name") for r in rows}


def killed(result: subprocess.CompletedProcess) -> bool:
    return result.returncode == -signal.SIGKILL


def test_every_step_has_a_kill_point():
    source = (ROOT / "lakecompact" / "landing" / "land.py").read_text() + (
        ROOT / "lakecompact" / "compaction" / "compact.py").read_text()
    assert all(f'crashpoints.reached("{step}")' in source for step in STEPS)


def test_killed_land_and_compact_are_finished_by_the_next_run(tmp_path):
    config = minimal_config(tmp_path)
    events = tmp_path / "events"
    events.mkdir()
    write_kcat(events / "a.jsonl", [ITEMS.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in range(1, 6)])
    expected = {i: f"n{i}" for i in range(1, 6)}

    assert killed(run(config, "land", kill_at="partitions-added"))  # one table's increment registered, no offsets
    rerun = run(config, "land")
    assert rerun.returncode == 0, rerun.stderr
    assert "land: batch 1 was interrupted; landing the same input again" in rerun.stdout

    assert killed(run(config, "compact", kill_at="swap"))  # committed, nothing archived or collected
    assert view(config) == expected  # base v1 and its (not yet archived) increment: each key once
    finished = run(config, "compact")
    assert finished.returncode == 0, finished.stderr
    assert "nothing pending (base v1)" in finished.stdout  # the killed run's version stands, finished by this one

    assert view(config) == expected

    table = tmp_path / "warehouse" / "lake" / "public_items"
    assert sorted(p.name for p in (table / "base").iterdir()) == ["v=1"]  # no orphan version
    assert not (table / "changes" / "_staging").exists() or not any((table / "changes" / "_staging").iterdir())
    assert not any((table / "increments").glob("hour=*/batch=*"))  # everything consumed was archived
    assert [p.name for p in (table / "archive").glob("hour=*/batch=*")] == ["batch=1"]  # landed once
    assert not (tmp_path / "warehouse" / "lake" / "_state" / "land-intent.json").exists()
