"""kill -9 of a spark-submit driver at every step of `land` and of `compact`, on the stack's Spark cluster with the
warehouse on its S3 (S3Proxy, `s3a://`), the shared metastore and the event files on the local disk, while a
downstream reader polls the change feeds.

Every command is `spark-submit` in client mode on the stack's cluster (tests/e2e/support/cluster.submit_command),
with one executor (spark.cores.max = 1, on whichever worker the master picks): the protocols under test run on the
driver, and a second executor JVM per driver would only slow the chain's 16 drivers on two cores. A kill stops the driver at its step (LAKECOMPACT_STOP_AT), then kills it with
SIGKILL, its JVM and its Python, as a crash right there would. One history of two tables:

1. a round landed and compacted cleanly (v1): the reader starts and sees v1's feed;
2. three more rounds, each landed, then compacted by two drivers killed right after a step of `compact`: the first
   kills the first table's compaction after its manifest, swap or archive, the second (which finishes that one's
   work) the second table's after version-written, changes-published or garbage collection; each next `compact`
   finishes or redoes the killed one's work before it compacts anything new. The first of those rounds' `land` is
   killed after intent, increments-written, partitions-added and offsets-recorded in turn, each rerun landing the
   interrupted batch again;
3. a last `compact`.

Then the next driver to need a killed one's lock took it over at once (its pid is gone on this host), the views
equal the source model, no object in the bucket is one that no committed state accounts for, and at no moment
did the reader see part of a feed version: each version it saw had exactly the rows and checksum it has at the end.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lakecompact.crashpoints import STEPS
from tests.e2e.support import cluster
from tests.e2e.support.cluster import Job
from tests.semantics.reference import expected_view
from tests.support.cli import ROOT, read_views
from tests.support.cli import lakecompact as command
from tests.support.databases import database_name
from tests.support.source import Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLES = ("public_items", "public_orders")
LAND_STEPS = STEPS[:4]
# per round, two compactions killed: the first table's at a step after its manifest (so that the next driver has
# nothing of it to redo), then the second table's, whose compaction the first driver never reached
KILLS = {2: ("manifest", "version-written"), 3: ("swap", "changes-published"), 4: ("archive", "garbage-collected")}
KEYS_PER_ROUND = 6


def s3_config(st, folder: Path, run: str, database: str) -> Path:
    config = folder / "lake.toml"
    config.write_text(
        f'warehouse = "s3a://{st.S3_BUCKET}/{run}/warehouse"\ndatabase = "{database}"\n'
        f'[metastore]\nuri = "{st.METASTORE_URI}"\n'
        f'[s3]\nendpoint = "{st.S3_ENDPOINT}"\nregion = "{st.S3_REGION}"\npath_style_access = true\n'
        f'access_key = "{st.S3_ACCESS_KEY}"\nsecret_key = "{st.S3_SECRET_KEY}"\n'
        f'[source]\nkind = "files"\npaths = ["{folder}/events/*.jsonl"]\n'
        '[defaults]\nbuckets = 2\n[spark.conf]\n"spark.sql.shuffle.partitions" = "2"\n'
    )
    return config


@dataclass
class Drivers:
    """The history's spark-submit drivers, in the order they ran; the killed ones with their Python's pid."""

    st: object
    folder: Path
    config: Path
    jobs: dict[str, Job] = field(default_factory=dict)
    killed: dict[str, int] = field(default_factory=dict)

    def run(self, name: str, *args: str) -> Job:
        job = self.jobs[name] = cluster.submit(self.st, self.folder, name, self.config, *args, cores=1).finish()
        assert "Traceback" not in job.stdout + job.stderr, job.tail()
        return job

    def kill_at(self, step: str, name: str, *args: str) -> Job:
        job = self.jobs[name] = cluster.submit(self.st, self.folder, name, self.config, *args, cores=1,
                                               LAKECOMPACT_STOP_AT=step)
        self.killed[name] = job.kill_when_stopped()
        return job

    def later(self, name: str) -> list[Job]:
        """The drivers of the same command (`land` or `compact`) that ran after this one."""
        names = list(self.jobs)
        return [self.jobs[later] for later in names[names.index(name) + 1:]
                if self.jobs[later].args[0] == self.jobs[name].args[0]]


def drop_lake(st, config: Path, database: str, run: str) -> None:
    """The lake's database dropped by a `sql` process (this module runs no Thrift server) and what is left of its
    objects deleted."""
    dropped = command(config, "sql", f"DROP DATABASE IF EXISTS `{database}` CASCADE")
    if dropped.returncode != 0:
        print(f"could not drop {database}: {dropped.stderr[-500:]}")
    cluster.delete_objects(st, f"{run}/")


def start_reader(config: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.e2e.support.feed_reader", str(config), str(out), *TABLES],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def observations(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def reader_saw(out: Path, table: str, version: int) -> bool:
    return any(str(version) in o.get("versions", {}) for o in observations(out) if o["table"] == table)


def while_reading(reader: subprocess.Popen, check):
    """`check`, for cluster.poll, failing at once when the reader exited."""
    def checked_reading():
        assert reader.poll() is None, f"the reader exited {reader.returncode}: {reader.stderr.read()}"
        return check()
    return checked_reading


@pytest.fixture(scope="module")
def history(st, stack, tmp_path_factory):
    """The history, run once; its database is dropped and its objects deleted after the module."""
    st.up(components=["metastore", "s3", "cluster"])
    folder = tmp_path_factory.mktemp("s3_kill9")
    (folder / "events").mkdir()
    database, run = database_name(), uuid.uuid4().hex[:10]
    config = s3_config(st, folder, run, database)
    drivers = Drivers(st, folder, config)
    rng = random.Random(5609)
    sources = {table: Source(f"pg.{table.replace('_', '.', 1)}", rng) for table in TABLES}
    positions = iter(range(100, 1_000_000, 7))
    out = folder / "feed.jsonl"
    reader = None

    def deliver_round(number: int) -> None:
        keys = rng.sample(range(1, 40), KEYS_PER_ROUND)
        deliver(folder / "events", f"round-{number}", [
            line for key in keys for source in sources.values() for line in source.change(key, next(positions))])

    try:
        deliver_round(1)
        drivers.run("land 1", "land")
        drivers.run("compact 1", "compact")
        reader = start_reader(config, out)
        cluster.poll(while_reading(reader, lambda: all(reader_saw(out, t, 1) for t in TABLES)), 300,
                     "the reader seeing v1", interval=0.5)
        for number, steps in KILLS.items():
            deliver_round(number)
            if number == 2:  # each rerun lands the interrupted batch again, and is killed at the next step
                for land_step in LAND_STEPS:
                    drivers.kill_at(land_step, f"land killed at {land_step}", "land")
            drivers.run(f"land {number}", "land")
            for table, step in zip(TABLES, steps):
                drivers.kill_at(step, f"compact {number} of {table} killed at {step}", "compact")
        drivers.run("compact last", "compact")
        # the second table's first killed compaction (at version-written) committed nothing
        final = {TABLES[0]: 1 + len(KILLS), TABLES[1]: len(KILLS)}
        cluster.poll(while_reading(reader, lambda: all(reader_saw(out, t, v) for t, v in final.items())), 300,
                     f"the reader seeing {final}", interval=0.5)
        (folder / "feed.jsonl.stop").touch()
        reader.wait(timeout=120)
        yield {"config": config, "database": database, "run": run, "sources": sources, "drivers": drivers,
               "observations": observations(out), "reader": reader, "final": final,
               "keys": cluster.bucket_keys(st, f"{run}/"), "bucket": st.S3_BUCKET}
    finally:
        for job in drivers.jobs.values():
            job.kill()
        if reader is not None and reader.poll() is None:
            reader.kill()
        if os.environ.get("LAKECOMPACT_KEEP_STACK") != "1":
            drop_lake(st, config, database, run)


def test_every_kill_happened_and_each_rerun_finished_the_work(history):
    drivers, first, second = history["drivers"], *TABLES
    jobs = drivers.jobs
    assert sorted(name.split(" killed at ")[1] for name in drivers.killed) == sorted(STEPS), list(drivers.killed)
    assert all(jobs[name].process.returncode == -9 for name in drivers.killed)
    for land_step in LAND_STEPS[1:]:
        assert "land: batch 2 was interrupted; landing the same input again" in jobs[
            f"land killed at {land_step}"].stdout
    for number, steps in KILLS.items():
        out = jobs[f"compact {number} of {first} killed at {steps[0]}"].stdout
        assert f"compact {first}: base v" not in out and f"compact {second}" not in out, out
        out = jobs[f"compact {number} of {second} killed at {steps[1]}"].stdout
        assert f"compact {first}: nothing pending (base v{number})" in out and f"compact {second}: base v" not in out
    final = history["final"]
    for table in TABLES:
        assert f"compact {table}: nothing pending (base v{final[table]})" in jobs["compact last"].stdout


def test_the_next_driver_to_need_a_killed_ones_lock_takes_it_over_at_once(history):
    """The killed driver's lock names its pid on this host, which is gone: the next driver of the same command that
    needs the lock takes it over with a warning, once, without waiting for the lease to run out; no driver found a
    table busy."""
    drivers = history["drivers"]
    root = f"s3a://{history['bucket']}/{history['run']}/warehouse/{history['database']}/"
    assert drivers.killed, "no driver was killed"
    for name, pid in drivers.killed.items():
        table = next((t for t in TABLES if f" of {t} " in name), None)
        lock = f"{root}{table}/_state/compact.lock" if table else f"{root}_state/land.lock"
        takers = [job.name for job in drivers.later(name) if (lock, pid) in job.taken_over()]
        assert len(takers) == 1, (name, lock, pid, takers)
    for job in drivers.jobs.values():  # a lock held by a live job: "… is being compacted by another job (…)"
        assert "by another job" not in job.stdout + job.stderr, (job.name, job.tail())


def test_the_views_equal_the_source(history):
    seen = read_views(history["config"], history["database"], TABLES)
    assert sorted(history["sources"]) == sorted(TABLES), history["sources"]
    for table, source in history["sources"].items():
        assert seen[table] == expected_view(source.model), table
        assert seen[table], table


def test_no_object_is_left_that_no_committed_state_accounts_for(history):
    keys = history["keys"]
    root = f"{history['run']}/warehouse/{history['database']}/"
    for table, final in history["final"].items():
        prefix = f"{root}{table}/"
        assert cluster.manifest_version(keys, prefix) == final
        assert cluster.orphans([k for k in keys if k.startswith(prefix)], prefix, final) == []
    assert f"{root}_state/land-intent.json" not in keys
    assert not [k for k in keys if k.endswith(".tmp") or "_temporary" in k or "__magic" in k]


def test_the_reader_saw_whole_feed_versions_only(history):
    """A feed version is visible whole or not at all, through every kill: each poll saw each version with the same
    rows and checksum, those it has at the end (or had before garbage collection dropped it: keep_versions = 3)."""
    seen = history["observations"]
    assert not [o for o in seen if "error" in o], [o for o in seen if "error" in o][:5]
    last = {t: next(o for o in reversed(seen) if o["table"] == t)["versions"] for t in TABLES}
    for table, final in history["final"].items():
        assert sorted(map(int, last[table])) == [final - 2, final - 1, final], last[table]
        values: dict[str, set] = {}
        for o in seen:
            if o["table"] == table:
                for version, got in o["versions"].items():
                    values.setdefault(version, set()).add(tuple(got))
        assert sorted(map(int, values)) == list(range(1, final + 1)), (table, sorted(values))
        assert {v: got for v, got in values.items() if len(got) > 1} == {}, table
        assert all(values[v] == {tuple(got)} for v, got in last[table].items()), table
    publications = len({(o["table"], tuple(sorted(o["versions"]))) for o in seen})
    assert publications >= sum(history["final"].values()), "the reader saw too few publications"
