"""kill -9 anywhere, as a soak (`scripts/test.sh -m soak`; not in the default run: each kill costs a process, a
JVM, and the two tests take about a quarter of an hour on two cores).

A real `lakecompact` process is killed (SIGKILL, the process and its JVM) at every named step of `land` and
`compact` in turn, and the same command is run again: the view is exact, nothing is visible twice, and no
orphan is left (no version folder no kept manifest refers to, no staged feed, no increment folder that is neither
pending nor archived, no intent). Then one history with 20 random kills, at a random step or after a random
delay, ends exact. The suite's default run kills one step per protocol (tests/test_kill9.py)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from pathlib import Path

import pytest

from lakecompact.crashpoints import STEPS
from tests.semantics.reference import expected_view
from tests.support.cli import killed, start
from tests.support.databases import database_name, lake_config
from tests.support.layout import archived_batches, batch_folders, unconsumed_batches
from tests.support.poll import poll
from tests.support.source import Source, deliver

pytestmark = [pytest.mark.soak, pytest.mark.spark]

TABLE = "public_items"
LAND_STEPS = ("intent", "increments-written", "partitions-added", "offsets-recorded")
COMPACT_STEPS = tuple(s for s in STEPS if s not in LAND_STEPS)


class SoakLake:
    """One lake on the suite's metastore (the stack's thrift service in CI, else each process's embedded one)."""

    def __init__(self, tmp_path: Path, metastore_uri: str, seed: int):
        self.tmp = tmp_path
        self.database = database_name() if metastore_uri else "lake"
        # keep_versions = 1: every compaction has an older version to collect
        self.config = lake_config(tmp_path, self.database, metastore_uri, extra="keep_versions = 1\n")
        self.table = tmp_path / "warehouse" / self.database / TABLE
        self.rng = random.Random(seed)
        self.source = Source("soak.public.items", self.rng)
        self.sent: list[dict] = []  # lines delivered so far, to redeliver
        self.rounds = 0

    def start(self, *args: str, kill_at: str | None = None) -> subprocess.Popen:
        return start(self.config, *args, kill_at=kill_at, own_group=True)  # the JVM dies with it

    def run(self, *args: str, kill_at: str | None = None, kill_after: float | None = None) -> subprocess.CompletedProcess:
        process = self.start(*args, kill_at=kill_at)
        try:
            out, err = process.communicate(timeout=kill_after if kill_after is not None else 600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        _bury(process.pid)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def must(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == 0, f"{args} exited {result.returncode}: {result.stderr[-3000:]}"
        return result.stdout

    def view(self) -> list[dict]:
        out = self.must("sql", f"SELECT id, note, qty FROM `{self.database}`.{TABLE}")
        return [json.loads(line) for line in out.splitlines()]

    def check_exact(self) -> None:
        rows = self.view()
        ids = [row["id"] for row in rows]
        assert len(ids) == len(set(ids)), f"a key visible twice: {sorted(ids)}"
        seen = {row["id"]: {"id": row["id"], "note": row.get("note"), "qty": row.get("qty")} for row in rows}
        assert seen == expected_view(self.source.model)

    def check_no_orphans(self, *, landed_batches: int) -> None:
        assert not (self.tmp / "warehouse" / self.database / "_state" / "land-intent.json").exists()
        staging = self.table / "changes" / "_staging"
        assert not staging.exists() or not any(staging.iterdir()), sorted(staging.iterdir())
        history = [json.loads(line) for line in self.must("history", "--table", TABLE, "--json").splitlines()]
        kept = [row["version"] for row in history if row["state"] in ("current", "kept")]
        manifests = self.table / "_state" / "manifests"
        referenced = {
            f"v={folder}/__bucket={bucket}"
            for version in kept
            for bucket, folder in json.loads((manifests / f"{version:012d}.json").read_text())["buckets"].items()
        }
        on_disk = {f"{d.parent.name}/{d.name}" for d in (self.table / "base").glob("v=*/__bucket=*")}
        assert on_disk == referenced, "a base folder no kept manifest refers to, or one missing"
        assert {d.name for d in (self.table / "base").iterdir()} == {r.split("/")[0] for r in referenced}
        # an expired version's feed folder goes one compaction after its partition
        expired = [row["version"] for row in history if row["state"] == "expired"]
        feeds = {d.name for d in (self.table / "changes").glob("v=*")}
        assert feeds <= {f"v={v}" for v in kept + expired[-1:]}, feeds
        pending = unconsumed_batches(self.table)
        assert not pending, f"left pending after a compaction: {pending}"
        assert batch_folders(self.table) == [f"batch={n}" for n in range(1, landed_batches + 1)]
        assert archived_batches(self.table) == list(range(1, landed_batches + 1))

    def deliver_round(self) -> None:
        """A file of changes to keys 1-8, with redeliveries of earlier lines, shuffled."""
        rng, source = self.rng, self.source
        self.rounds += 1
        lines = [line for key in rng.sample(range(1, 9), 5) for line in source.change(key, 95 + 3 * len(source.model))]
        lines += [source.redelivered(line, same_offset=rng.random() < 0.5)
                  for line in rng.sample(self.sent, min(3, len(self.sent)))]
        rng.shuffle(lines)
        self.sent += [line for line in lines if line["payload"] is not None]
        deliver(self.tmp / "events", f"round-{self.rounds}", lines)


def _bury(group: int) -> None:
    """Kill what is left of the process group (the JVM of a killed driver) and wait until it is gone."""
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        return

    def gone() -> bool:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        return False

    poll(gone, 60, f"process group {group} gone after SIGKILL", interval=0.1)


def test_a_kill_at_every_step_then_the_same_command_is_exact(tmp_path, metastore_uri):
    lake = SoakLake(tmp_path, metastore_uri, seed=9)
    batches = 0
    for step in STEPS:
        lake.deliver_round()
        if step in COMPACT_STEPS:
            lake.must("land")
            batches += 1
        command = "land" if step in LAND_STEPS else "compact"
        assert killed(lake.run(command, kill_at=step)), f"{command} was not killed at {step}"
        rerun = lake.must(command)
        if step in LAND_STEPS:
            batches += 1
            lake.must("compact")  # what the killed batch landed, folded in, for the orphan check
        assert "Traceback" not in rerun
        lake.check_exact()
        lake.check_no_orphans(landed_batches=batches)


def test_twenty_random_kills_in_one_history_end_exact(tmp_path, metastore_uri):
    lake = SoakLake(tmp_path, metastore_uri, seed=20)
    rng = lake.rng
    kills = 0
    while kills < 20:
        lake.deliver_round()
        for command, steps in (("land", LAND_STEPS), ("compact", COMPACT_STEPS)):
            if rng.random() < 0.5:
                result = lake.run(command, kill_at=rng.choice(steps))
            else:  # anywhere: JVM start, a Spark job, between two file operations
                result = lake.run(command, kill_after=rng.uniform(2.0, 25.0))
            assert result.returncode in (0, -signal.SIGKILL), result.stderr[-3000:]
            kills += killed(result)
    lake.must("land")
    lake.must("compact")
    lake.check_exact()
    batches = len(archived_batches(lake.table))
    lake.check_no_orphans(landed_batches=batches)
    assert "nothing new to land" in lake.must("land")
