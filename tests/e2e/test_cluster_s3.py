"""Where users run it: `spark-submit` in client mode on a Spark standalone cluster (the stack's master and two
1-core workers, whose executors have no Python), the warehouse on S3 (`s3a://lake/…`, the stack's S3Proxy, with
the S3A magic committer), the shared Hive metastore; the views read by another engine (Spark's Thrift server,
through beeline) on the same metastore and bucket.

One history, run once for the module (`history`), then checked part by part:

1. real Debezium PostgreSQL → Kafka (two tables, a few hundred rows; inserts, updates, deletes, a key change, a
   transaction, a column added) → `land` (kill -9 of its driver right after the first table's increment was
   written, then the rerun) → the two tables' `compact --table T` as two drivers started at once, each on a worker
   of its own (spark.cores.max = 1); worker 2 is killed (kill -9, with its executor) while one of them runs a task
   there: that compaction finishes on worker 1 once the other is done → each view, read through the Thrift
   server, equals the source table, every key once;
2. more changes → `land` → a compactor of `accounts`, held at `version-written` (LAKECOMPACT_STOP_AT) while a
   second compactor of the table says the table is busy and exits 0, then let go: it compacts; at the same time a
   compactor of `orders` killed (kill -9 of its driver, JVM and Python) at `version-written` (its new base version
   written, no manifest yet), then run again: it takes the dead driver's lock over at once, with a warning, and
   redoes the version → the views are exact; no object in the bucket that no committed state accounts for; and
   over the whole history no parquet object was copied (S3 has no rename: a rename is a copy of every object).

Each step's command line (`support.cluster.submit_command`) is kept beside its output, `<step>.command`.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e import support
from tests.e2e.support import cluster
from tests.e2e.support.cluster import Job, poll, submit

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLES = ("accounts", "orders")
INITIAL = {"accounts": 80, "orders": 120}  # rows before the connector starts: its snapshot
COMPACTED = re.compile(r"^compact (\w+): base v(\d+) -> v(\d+): (\d+) events from (\d+) batch")


@dataclass
class History:
    db: support.Postgres
    run: str  # the run's prefix in the bucket
    database: str
    workload: support.Workload
    config: Path
    folder: Path
    stack: object
    jobs: dict[str, Job] = field(default_factory=dict)
    comparisons: dict[str, list[support.Comparison]] = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def tables(self) -> list[support.Table]:
        return self.workload.tables

    def lake_table(self, name: str) -> str:
        return self.db.lake_table(name)

    def prefix(self, table: str | None = None) -> str:
        root = f"{self.run}/warehouse/{self.database}/"
        return root + (f"{self.lake_table(table)}/" if table else "")

    def submit(self, name: str, *args: str, cores: int | None = 1, **env: str) -> Job:
        job = self.jobs[name] = submit(self.stack, self.folder, name, self.config, *args, cores=cores, **env)
        return job

    def compare(self, stage: str) -> None:
        started = time.monotonic()
        self.comparisons[stage] = cluster.compare_through_thrift(
            self.stack, self.database, self.db, self.tables, stage,
            lambda column: support.spark_type(column.kind, self.db.connector_type))
        self.seconds[f"read through the Thrift server: {stage}"] = time.monotonic() - started


@pytest.fixture(scope="module")
def cluster_stack(st, stack):
    """The stack with its S3, its cluster, a metastore that makes folders on s3a:// and a Thrift server that reads
    them; the Thrift server, when this module started it, is stopped after it (unless LAKECOMPACT_KEEP_STACK=1)."""
    with cluster.metastore_reading_s3(st):
        started = cluster.thriftserver_reading_s3(st)
        try:
            yield st
        finally:
            if started and os.environ.get("LAKECOMPACT_KEEP_STACK") != "1":
                st.down(["thriftserver"])


def kill_driver_at(history: History, name: str, step: str, *args: str) -> Job:
    """Run a command stopped at `step` (LAKECOMPACT_STOP_AT), then kill -9 its driver: the JVM and its Python."""
    job = history.submit(name, *args, LAKECOMPACT_STOP_AT=step)
    history.facts[f"{name} pid"] = job.kill_when_stopped()
    return job


def apps_at_once(stack, jobs: list[Job], seen: set) -> bool:
    """Record the applications the master runs now; True once every job's application has been seen running
    together with all the others."""
    apps = {cluster.application_of(job) for job in jobs}
    running = {app["id"] for app in cluster.running_apps(stack) if app.get("state") == "RUNNING"}
    if None not in apps and apps <= running:
        seen.update(apps)
        return True
    return False


@pytest.fixture(scope="module")
def history(cluster_stack, spark, e2e_spark, tmp_path_factory):
    """The history, run once; at the end its database is dropped and its objects deleted (unless
    LAKECOMPACT_KEEP_STACK=1), while the metastore can still delete folders on s3a://."""
    stack = cluster_stack
    session = support.check_session(spark, e2e_spark)  # the suite's session: Kafka's offsets for wait_delivered
    folder = tmp_path_factory.mktemp("cluster_s3")
    db = support.Postgres(stack, support.unique("e2e_cs3"))
    run, database = support.unique("cluster"), support.unique("cluster")
    workload = support.Workload(db, 20261128, tables=TABLES)
    config = cluster.s3_lake_toml(stack, folder / "lake.toml", run, database, [db.topic(t) for t in TABLES])
    history = History(db, run, database, workload, config, folder, stack)
    try:
        run_history(history, session)
        yield history
    finally:
        if os.environ.get("LAKECOMPACT_KEEP_STACK") != "1":
            cluster.drop_lake(stack, database, f"{run}/")


def run_history(history: History, session) -> None:
    stack, db, workload, run = history.stack, history.db, history.workload, history.run
    mark = stack.s3_request_log_mark()
    started = time.monotonic()
    accounts, orders = history.lake_table("accounts"), history.lake_table("orders")
    try:
        # -- 1. snapshot and changes; land (its driver killed once); two compactors at once ------------------
        db.create_namespace()
        db.run(workload.create_script(INITIAL))
        db.register(workload.tables)
        stack.wait_connector_streaming(db.connector)
        support.wait_delivered(session, stack, [db], workload.expected_events(), {}, exact=True)
        support.write_phase(session, stack, db, workload, 150, add_column="accounts", transaction=True,
                            key_change=True)
        history.seconds["source, Debezium and Kafka (1)"] = time.monotonic() - started

        kill_driver_at(history, "land-killed", "increments-written", "land")
        history.submit("land-1", "land").finish()
        # each on one worker (spark.cores.max = 1); worker 2 is killed once one of them runs a task there
        both = {name: history.submit(f"compact-{name}-1", "compact", "--table", history.lake_table(name))
                for name in TABLES}
        together: set = set()
        try:
            victim = poll(lambda: apps_at_once(stack, list(both.values()), together)
                          and next((name for name, job in both.items()
                                    if cluster.worker_runs_tasks(stack, 2, cluster.application_of(job))), None),
                          300, "both compactors running at once, one of them on worker 2")
            stack.kill_worker(2)
            history.facts["victim"] = victim
            history.facts["victim ran on when worker 2 was killed"] = both[victim].process.poll() is None
            for job in both.values():
                job.finish()
        finally:
            stack.start_worker(2)
        history.facts["apps at once"] = together
        history.facts["executors"] = {name: cluster.executors_of(stack, cluster.application_of(job))
                                      for name, job in both.items()}
        history.facts["alive workers"] = sorted(stack.alive_worker_ports())
        history.compare("after land and two compactors at once, a worker killed")

        # -- 2. a second compactor of a held table; a compactor's driver killed, and its rerun ---------------
        step = time.monotonic()
        support.write_phase(session, stack, db, workload, 100, add_column="orders")
        history.seconds["source, Debezium and Kafka (2)"] = time.monotonic() - step
        history.submit("land-2", "land").finish()
        held = history.submit("compact-accounts-held", "compact", "--table", accounts,
                              LAKECOMPACT_STOP_AT="version-written")
        kill_driver_at(history, "compact-orders-killed", "version-written", "compact", "--table", orders)
        poll(held.stopped, 300, "the held compactor stopped at version-written", held)
        second = history.submit("compact-accounts-second", "compact", "--table", accounts)
        rerun = history.submit("compact-orders-rerun", "compact", "--table", orders)
        second.finish()
        held.resume()
        held.finish()
        rerun.finish()
        history.compare("after a compactor held, one killed and rerun")

        # -- what is in the bucket, and what S3 was asked ---------------------------------------------------
        keys = cluster.bucket_keys(stack, f"{run}/")
        history.facts["keys"] = keys
        history.facts["multipart uploads"] = cluster.pending_multipart_uploads(stack, f"{run}/")
        history.facts["versions"] = {name: cluster.manifest_version(keys, history.prefix(name)) for name in TABLES}
        history.facts["requests"] = [r for r in stack.s3_request_log(since=mark)
                                     if r.key.startswith(f"{run}/") or r.query.get("prefix", "").startswith(f"{run}/")]
        history.seconds["whole history"] = time.monotonic() - started
        support.say("timings: " + ", ".join(f"{k} {v:.0f}s" for k, v in history.seconds.items()))
        support.say("drivers: " + ", ".join(f"{j.name} {j.seconds:.0f}s" for j in history.jobs.values()))
    finally:
        for job in history.jobs.values():
            job.kill()
        try:
            db.unregister()
        finally:
            db.drop_namespace()


# ---------------------------------------------------------------------------------------------------------------
def compacted(job: Job) -> list[tuple[str, int, int]]:
    return [(m[1], int(m[2]), int(m[3])) for line in job.stdout.splitlines() if (m := COMPACTED.match(line))]


def test_land_then_two_compactors_at_once_the_views_equal_the_source(history):
    """Debezium's events landed by spark-submit on the cluster, the two tables compacted by two drivers at once
    (each on a worker of its own), and the views read by the Thrift server equal the source, every key once."""
    jobs = history.jobs
    assert "land: batch 1 was interrupted; landing the same input again" in jobs["land-1"].stdout
    for name in TABLES:
        assert compacted(jobs[f"compact-{name}-1"]) == [(history.lake_table(name), 0, 1)]
    assert len(history.facts["apps at once"]) == 2, "the two compactors did not run at the same time"
    for name, executors in history.facts["executors"].items():
        assert executors, f"{name}: no executor of it ran on a worker"
    stage = history.comparisons["after land and two compactors at once, a worker killed"]
    assert support.assert_equal(stage, keyed=True) > 0
    assert all(c.view_rows == c.source_rows > 0 for c in stage)


def test_a_second_compactor_of_a_held_table_says_it_is_busy_and_exits_0(history):
    accounts = history.lake_table("accounts")
    second = history.jobs["compact-accounts-second"]
    assert second.process.returncode == 0
    assert any(line.startswith(f"compact {accounts}: skipped, table {accounts} is being compacted by another job")
               for line in second.stdout.splitlines()), second.tail()
    assert compacted(second) == []
    assert compacted(history.jobs["compact-accounts-held"]) == [(accounts, 1, 2)]  # the held one compacted


def test_a_killed_driver_is_rerun_its_lock_taken_over_and_the_views_are_exact(history):
    """kill -9 of `land`'s driver after the first table's increment was written, and of `compact`'s after it wrote
    the new base version (before its manifest): each rerun takes the dead driver's lock over at once (its pid is
    gone on this host) with a warning, finishes or redoes the work, and the views are exact."""
    for killed, rerun, lock in [("land-killed", "land-1", f"{history.prefix()}_state/land.lock"),
                                ("compact-orders-killed", "compact-orders-rerun",
                                 f"{history.prefix('orders')}_state/compact.lock")]:
        assert history.jobs[killed].process.returncode == -9
        assert history.jobs[rerun].taken_over() == [(f"s3a://{history.stack.S3_BUCKET}/{lock}",
                                                     history.facts[f"{killed} pid"])], history.jobs[rerun].tail()
    orders = history.lake_table("orders")
    assert compacted(history.jobs["compact-orders-rerun"]) == [(orders, 1, 2)]
    assert support.assert_equal(history.comparisons["after a compactor held, one killed and rerun"]) > 0


def test_a_worker_killed_mid_compaction_the_compaction_finishes_on_the_other(history):
    """Worker 2 killed (kill -9, with its executor) while a compactor's only executor ran a task there: the
    compactor gets an executor on worker 1 (once the other compactor is done with it) and finishes; the view is
    exact (test_land_then_two_compactors_at_once_the_views_equal_the_source)."""
    victim = history.facts["victim"]
    assert history.facts["victim ran on when worker 2 was killed"]
    assert compacted(history.jobs[f"compact-{victim}-1"]) == [(history.lake_table(victim), 0, 1)]
    assert {worker for worker, _ in history.facts["executors"][victim]} == {1, 2}, history.facts["executors"]
    assert history.facts["alive workers"] == [history.stack.SPARK_WORKER_PORT, history.stack.SPARK_WORKER_PORT + 1]


def test_no_object_in_the_bucket_that_no_committed_state_accounts_for(history):
    keys = history.facts["keys"]
    assert not history.facts["multipart uploads"], history.facts["multipart uploads"]
    for name in TABLES:
        prefix, version = history.prefix(name), history.facts["versions"][name]
        assert version == 2, (name, version)
        assert any(key.startswith(f"{prefix}base/v={version}/") and key.endswith(".parquet") for key in keys)
        assert cluster.orphans([k for k in keys if k.startswith(prefix)], prefix, version) == []
    assert f"{history.prefix()}_state/land-intent.json" not in keys
    assert not [k for k in keys if "conditional-write-probe" in k]


def test_no_parquet_object_is_ever_copied(history):
    """S3 has no rename: a committer or protocol that renames copies every object. Over the whole history (lands,
    compactions, two killed drivers, a lost executor, reads) no data object was copied."""
    requests = history.facts["requests"]
    copies = cluster.copies(requests)
    ops = Counter(r.op for r in requests)
    support.say(f"S3 requests under the run's prefix: {dict(ops.most_common())}; copies of parquet objects: "
                f"{len(copies['data'])}, of other objects: {len(copies['other'])} {copies['other'][:10]}")
    assert ops["PutObject"] > 0 and ops["CompleteMultipartUpload"] > 0  # the log saw the writes
    assert copies["data"] == []
