"""`cluster`: lakecompact local against spark-submit on the stack's Spark cluster with the warehouse on the
stack's S3 (BenchStack brings them up and counts S3's requests)."""

from __future__ import annotations

import datetime
import json
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from datasets import BENCH, change_after, dataset
from measure import ROOT, ServiceCpu, core_seconds, log, loud, run_process, spark_version
from report import CLUSTER_RUN, LOCAL_RUN, LOCAL_S3_RUN, fmt, s3_tables

import stack

from .common import land_snapshot, ratio_of

if TYPE_CHECKING:
    from run import Run

STACK_PARTS = ("postgres", "metastore", "s3", "cluster")  # what stack.up(["metastore", "s3", "cluster"]) starts


class BenchStack:
    """The stack's metastore, S3 and Spark cluster for the cluster scenario: brought up at the first step that needs
    them (stack.up), and at the end what this started is stopped. A metastore that ran before and that this
    restarted with the s3a client is left running so (see leave).

    The metastore needs the s3a client on its class path to make the folders of databases and tables at s3a://
    locations, and the stack starts it without one: the same workaround as tests/e2e/support/cluster.py's
    metastore_reading_s3 (its Hadoop swapped for pyspark's hadoop-client-* with the s3a jars and a core-site.xml of
    the stack's S3), checked again before every step, since a test on this machine may restart it meanwhile."""

    def __init__(self, args, prefix: str):
        self.args, self.prefix = args, prefix  # prefix: this run's keys in the bucket ("bench-…/")
        self.stack = stack
        self.found: dict | None = None  # what ran before this started anything
        self.restarted_metastore = False
        self.notes: list[str] = []

    # -- bringing up and leaving ---------------------------------------------------------------------------
    def ready(self, step: str = "", timed: bool = True) -> None:
        stack = self.stack
        if self.found is None:
            status = stack.status()
            self.found = {part: bool(status[part]["pid"]) for part in STACK_PARTS}
            self.found["workers"] = {int(n): bool(pid) for n, pid in status["cluster"]["workers"].items()}
            log(f"stack before this run: {self.found}; stack.up(metastore, s3, cluster)")
            stack.up(components=["metastore", "s3", "cluster"])
        self._metastore_reading_s3()
        self._cluster_free(step)

    def _metastore_reading_s3(self) -> None:
        stack = self.stack
        pid = stack.component("metastore").pid()
        if pid and "hadoop-aws" in stack.cmdline(pid):
            return
        conf_dir = BENCH / "stack" / "metastore-conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / "core-site.xml").write_text(
            "<?xml version=\"1.0\"?>\n<configuration>\n" + "".join(
                f"  <property><name>{key.removeprefix('spark.hadoop.')}</name><value>{value}</value></property>\n"
                for key, value in stack.s3_spark_conf().items()) + "</configuration>\n")
        hadoop = sorted(str(p) for p in (stack.spark_home() / "jars").glob("hadoop-client-*.jar"))
        stock = stack.metastore.classpath

        def with_s3a() -> str:
            entries = []
            for entry in stock().split(":"):
                if entry.endswith("/*") and Path(entry[:-2]) == stack.METASTORE_JARS:  # its jars, less its Hadoop
                    entries += sorted(str(p) for p in stack.METASTORE_JARS.glob("*.jar") if "hadoop-client" not in p.name)
                else:
                    entries.append(entry)
            return ":".join([str(conf_dir), *entries, *hadoop, *stack.s3a_jars()])

        log("restarting the stack's metastore with the s3a client (it makes the folders of s3a:// databases and "
            "tables; the stack starts it without one)")
        stack.stop_metastore()
        stack.metastore.classpath = with_s3a
        try:
            stack.start_metastore()
        finally:
            stack.metastore.classpath = stock
        self.restarted_metastore = True

    def _cluster_free(self, step: str) -> None:
        """Wait (up to --quiet-wait) until no other application holds the cluster's cores, then for both workers."""
        stack, deadline = self.stack, time.monotonic() + max(self.args.quiet_wait, 5)
        while True:
            try:
                apps = [a.get("name") for a in stack.cluster_state().get("activeapps", [])]
            except Exception:  # noqa: BLE001
                apps = []
            if not apps:
                break
            if time.monotonic() > deadline:
                self.notes.append(f"{step}: started while other applications held the cluster: {apps}")
                break
            log(f"the cluster runs other applications ({apps}): waiting")
            time.sleep(5)
        if not stack.component("cluster").ready():
            log("a worker of the stack's cluster is down: stack.up(cluster)")
            stack.up(components=["cluster"])

    def leave(self) -> None:
        """Stop what this started; the metastore restarted as the stack starts it (when this restarted it)."""
        if self.found is None:
            return
        stack, found = self.stack, self.found
        if not found["cluster"]:
            stack.stop_cluster()
        else:
            for n, was in found["workers"].items():
                if not was:
                    stack.stop_worker(n)
        if not found["s3"]:
            stack.stop_s3()
        if not found["metastore"]:
            log("stopping the metastore this run started")
            stack.stop_metastore()
        elif self.restarted_metastore:
            # left as it is: it serves all the stack's does, and a test that found it reading s3a:// (the e2e
            # cluster tests' metastore_reading_s3 then does not restart it) would fail if it were restarted without
            self.notes.append("The stack's metastore was restarted with the s3a client for this run and left running "
                              "so (restarting it without would break a cluster test that found it so).")
        if not found["postgres"]:
            stack.component("postgres").stop()

    # -- what the S3 server served -------------------------------------------------------------------------
    @contextmanager
    def s3_requests(self, step: str) -> Iterator[dict]:
        """Around one process: the requests S3 served meanwhile (its request log between two marks), per op."""
        mark, pids = self.stack.s3_request_log_mark(), self._pids()
        info: dict = {}
        sampler = ServiceCpu([pid for name, pid in pids.items() if pid and name.startswith("worker")],
                             [pid for name, pid in pids.items() if pid and not name.startswith("worker")])
        try:
            yield info
        finally:
            info["service_cpu_seconds"] = sampler.stop()
            time.sleep(0.3)  # the last lines of the log
            info["s3"] = self.summarize(self.stack.s3_request_log(mark))
            changed = [name for name, pid in self._pids().items() if pid != pids.get(name)]
            if changed:  # restarted or stopped by someone else meanwhile (a test on this machine)
                info["restarted_meanwhile"] = changed
                self.notes.append(f"{step}: {', '.join(changed)} restarted or stopped by another process during it")

    def _pids(self) -> dict:
        stack = self.stack
        status = stack.status()
        return {"metastore": status["metastore"]["pid"], "s3": status["s3"]["pid"],
                **{f"worker {n}": pid for n, pid in status["cluster"]["workers"].items()}}

    @staticmethod
    def retry(step: str, info: dict) -> str | None:
        """A step that failed while another process restarted a service it uses is run once more."""
        changed = info.get("restarted_meanwhile")
        return f"another process restarted {', '.join(changed)} during it" if changed else None

    def summarize(self, requests: list) -> dict:
        """Per S3 operation, this run's requests (a key under its prefix, a listing of its prefix, or a request of
        the bucket itself, which names no key: DeleteObjects, HeadBucket); copies split into data files and
        others; `foreign`: requests of other clients meanwhile (keys elsewhere), which the bucket-level ones may
        include."""
        bucket = self.stack.S3_BUCKET
        ops: Counter = Counter()
        data_copies, other_copies, foreign, bucket_level, put_bytes = [], [], 0, 0, 0
        for r in requests:
            if r.bucket != bucket:
                foreign += 1
                continue
            if r.key:
                if not r.key.startswith(self.prefix):
                    foreign += 1
                    continue
            elif "prefix" in r.query:
                if not r.query["prefix"].startswith(self.prefix):
                    foreign += 1
                    continue
            else:
                bucket_level += 1
            ops[r.op] += 1
            if r.op in ("PutObject", "UploadPart"):
                put_bytes += int(r.headers.get("x-amz-decoded-content-length") or r.headers.get("content-length") or 0)
            if r.copy_source is not None:
                if r.key.endswith(".parquet") or ".parquet" in r.copy_source:
                    data_copies.append(f"{r.op} {r.copy_source} -> {r.key}")
                else:
                    other_copies.append(f"{r.op} {r.copy_source} -> {r.key}")
        return {"requests": sum(ops.values()), "ops": dict(ops.most_common()), "copies_data": data_copies,
                "copies_other": other_copies, "bucket_level": bucket_level, "foreign": foreign,
                "put_mb": round(put_bytes / 1e6, 1)}

    # -- the lake and its commands -------------------------------------------------------------------------
    def launcher(self) -> list[str]:
        """spark-submit on the stack's cluster (`stack.spark_submit_command`), the benchmark's memory settings."""
        return [*self.stack.spark_submit_command(executor_memory=self.args.executor_memory,
                                                 driver_memory=self.args.driver_memory),
                str(ROOT / "lakecompact" / "__main__.py")]

    def lake_toml(self, path: Path, database: str, paths: list[str], local: bool = False) -> None:
        """lake.toml of a lake on the stack's S3 and metastore; `local`: for `lakecompact` itself on local[cores]
        (its own warehouse folder), not spark-submit."""
        stack, args, q = self.stack, self.args, json.dumps
        warehouse = f"s3a://{stack.S3_BUCKET}/{self.prefix}{'local-s3/' if local else ''}warehouse"
        lines = [f"warehouse = {q(warehouse)}", f"database = {q(database)}",
                 "", "[metastore]", f"uri = {q(stack.METASTORE_URI)}",
                 "", "[s3]", f"endpoint = {q(stack.S3_ENDPOINT)}", f"region = {q(stack.S3_REGION)}",
                 "path_style_access = true", f"access_key = {q(stack.S3_ACCESS_KEY)}",
                 f"secret_key = {q(stack.S3_SECRET_KEY)}",
                 "", "[source]", 'kind = "files"', f"paths = [{', '.join(q(p) for p in paths)}]",
                 "", "[defaults]", f"buckets = {args.buckets}", f"merge_on_read = {q(args.merge_on_read)}",
                 "", "[spark.conf]", f'"spark.sql.shuffle.partitions" = {q(str(args.shuffle_partitions))}',
                 '"spark.ui.enabled" = "false"']
        if local:
            lines += [f'"spark.driver.memory" = {q(args.driver_memory)}', '"spark.driver.host" = "127.0.0.1"',
                      '"spark.driver.bindAddress" = "127.0.0.1"', "", "[spark]", f"master = {q(f'local[{args.cores}]')}"]
        path.write_text("\n".join(lines) + "\n")

    def drop(self, run: Run, databases: list[str], paths: list[str]) -> None:
        """The run's databases out of the shared metastore, and its objects out of the bucket (not timed)."""
        stack = self.stack
        folder = run.work / "cleanup"
        folder.mkdir(parents=True, exist_ok=True)
        for database in databases:
            self.lake_toml(folder / "lake.toml", database, paths)
            try:
                self.ready("cleanup", timed=False)
                done = run_process([*self.launcher(), "--config", str(folder / "lake.toml"), "sql",
                                    f"DROP DATABASE IF EXISTS `{database}` CASCADE"],
                                   BENCH / "logs" / run.name / f"cleanup-{database}.log", env=SUBMIT_ENV, timeout=900)
                if done["rc"]:
                    log(f"dropping {database} failed (see {done['log']})")
            except Exception as exc:  # noqa: BLE001 - the results matter more than the cleanup
                log(f"dropping {database} failed: {exc}")
        shutil.rmtree(stack.S3_DIR / "data" / stack.S3_BUCKET / self.prefix.rstrip("/"), ignore_errors=True)


SUBMIT_ENV = {"SPARK_LOCAL_IP": "127.0.0.1", "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR"}


def _s3_note(s3: dict | None) -> str:
    if not s3:
        return ""
    ops = ", ".join(f"{op} {count:,}" for op, count in s3["ops"].items())
    copies = len(s3["copies_data"]) + len(s3["copies_other"])
    return (f"S3: {s3['requests']:,} requests ({ops}); COPY {copies} ({len(s3['copies_data'])} of .parquet); "
            f"{s3['put_mb']:,} MB put")


def scenario_cluster(run: Run) -> None:
    args = run.args
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)  # the merge scenario's data sets
    change = change_after(f"change-{n}-{c}", snap, c, args, 0, n, 1)
    run.params = {"rows": n, "change_rows": c, "buckets": args.buckets, "local_master": f"local[{args.cores}]",
                  "land_batch_files": args.land_batch_files, "driver_memory": args.driver_memory,
                  "executor_memory": args.executor_memory, "shuffle_partitions": args.shuffle_partitions,
                  "events_per_file": args.events_per_file, **({"local_s3": True} if args.local_s3 else {})}
    s_glob, c_glob = snap["glob"], change["glob"]
    snap_ops, snap_steps = land_snapshot(snap, args)
    commands = [*[(op["step"], ["land"], op["paths"]) for op in snap_ops],
                ("compact v1", ["compact"], [s_glob]),
                ("land change", ["land"], [s_glob, c_glob]),
                ("compact v2", ["compact"], [s_glob, c_glob])]
    checks = {"after change": (len(commands) - 1, [s_glob, c_glob])}
    steps = [step for step, _, _ in commands]

    # (a) local[2], a local warehouse and its embedded metastore: `lakecompact --config lake.toml …`, as the merge
    # scenario's lakecompact-cli
    # lakecompact on the Spark of the stack's cluster (run.py's own environment, whose pyspark stack.spark_home()
    # and spark-submit use) in every run: the cluster's workers cannot run another, and local and cluster compare
    # on one Spark
    run.cli(LOCAL_RUN, commands, checks=checks, python=sys.executable)

    # (b) spark-submit on the stack's cluster, the warehouse on the stack's S3, the stack's metastore
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    prefix, database = f"bench-{run.name}-{stamp}/", f"bench_{re.sub(r'[^a-z0-9]+', '_', run.name)}_{stamp.replace('-', '_')}"
    cluster = BenchStack(args, prefix)
    whole = {}
    try:
        mark = None

        def before(step, timed):
            nonlocal mark
            cluster.ready(step, timed)
            if mark is None:
                mark = cluster.stack.s3_request_log_mark()

        run.cli(CLUSTER_RUN, commands, checks=checks, engine="lakecompact spark-submit",
                launcher=cluster.launcher(), write_toml=lambda path, paths: cluster.lake_toml(path, database, paths),
                env=SUBMIT_ENV, before=before, measure=cluster.s3_requests, retry=cluster.retry,
                relation=f"{database}.public_customers", python=sys.executable)
        if mark is not None:
            whole = cluster.summarize(cluster.stack.s3_request_log(mark))
            run.runs[CLUSTER_RUN]["info"].update(warehouse=f"s3a://{cluster.stack.S3_BUCKET}/{prefix}warehouse",
                                                 database=database, s3_whole_run=whole)
        if args.local_s3:
            # (c) the local run's way (lakecompact on local[2]) with (b)'s warehouse: S3's share apart from the cluster's
            run.cli(LOCAL_S3_RUN, commands, checks=checks, engine="lakecompact-cli",
                    write_toml=lambda path, paths: cluster.lake_toml(path, f"{database}_local", paths, local=True),
                    before=lambda step, timed: cluster.ready(step, timed), measure=cluster.s3_requests,
                    retry=cluster.retry, relation=f"{database}_local.public_customers", python=sys.executable)
        if cluster.found is not None and not args.keep_work:
            cluster.drop(run, [database, *([f"{database}_local"] if args.local_s3 else [])], [s_glob, c_glob])
    finally:
        cluster.leave()
    run.notes += cluster.notes
    reused_info = run.runs.get(CLUSTER_RUN, {}).get("info", {})
    whole = whole or reused_info.get("s3_whole_run", {})
    if reused_info.get("warehouse"):
        prefix = reused_info["warehouse"].split("/", 3)[3].removesuffix("warehouse")

    run.engine("duckdb", "duckdb", [{"op": "load", "paths": [s_glob], "step": "load snapshot"},
                                    {"op": "merge", "paths": [c_glob], "step": "apply change"},
                                    {"op": "check", "name": "after change"}])

    # the two lakes' checksums, one against the other (and both against DuckDB, in the correctness table)
    local_check = run.runs.get(LOCAL_RUN, {}).get("checks", {}).get("after change")
    cluster_check = run.runs.get(CLUSTER_RUN, {}).get("checks", {}).get("after change")
    if local_check and cluster_check and local_check != cluster_check:
        loud(f"MISMATCH: the S3 cluster's view {cluster_check} != the local view {local_check}")
        run.failures.append(f"the S3 cluster's view {cluster_check} != the local view {local_check}")
    elif not (local_check and cluster_check):
        run.failures.append("the checksum of a view is missing (a run failed): local and S3 not compared")

    # the summary: each step, local then the cluster, ratio cluster / local
    def step_info(run_name, step):
        return next((s.get("info", {}) for s in run.runs.get(run_name, {}).get("steps", []) if s["step"] == step), {})

    def inner(run_name, names, key="inner_seconds"):
        found = [step_info(run_name, s).get(key) for s in names]
        return round(sum(found), 1) if all(found) else None

    for result in run.runs.values():  # the core of each step (also of runs taken from the last results)
        for step in result.get("steps", []):
            if "core_seconds" not in step.get("info", {}) and result.get("engine", "").startswith("lakecompact"):
                step.setdefault("info", {})["core_seconds"] = core_seconds(step.get("info", {}))

    def inside(run_name, names, reference=None):
        seconds, core = inner(run_name, names), inner(run_name, names, "core_seconds")
        if seconds is None:
            return ""
        text = f"inside {fmt(seconds, 1)} s" + (f" ({fmt(ratio_of(seconds, reference[0]))}×)" if reference else "")
        if core is not None:
            what = ("land" if all("land" in n for n in names) else "compaction" if all("compact" in n for n in names)
                    else "land and compaction")
            text += f", of which the {what} itself {fmt(core, 1)} s" + (
                f" ({fmt(ratio_of(core, reference[1]))}×)" if reference and reference[1] else "")
        return text

    summary = []
    groups = [(step, [step]) for step in steps] + [
        (f"load snapshot ({len(snap_steps)} lands + compact v1)", [*snap_steps, "compact v1"]),
        ("apply change (land change + compact v2)", ["land change", "compact v2"])]
    for label, names in groups:
        local_s, cluster_s = run.seconds(LOCAL_RUN, *names), run.seconds(CLUSTER_RUN, *names)
        reference = (inner(LOCAL_RUN, names), inner(LOCAL_RUN, names, "core_seconds"))
        label = f"{label} (whole process{'es' if len(names) > 1 else ''})"
        summary.append({"step": label, "engine": f"local[{args.cores}], local warehouse (lakecompact CLI)",
                        "seconds": local_s, "ratio": 1.0 if local_s else None,
                        "note": inside(LOCAL_RUN, names), "run": LOCAL_RUN, "steps": names})
        if LOCAL_S3_RUN in run.runs:
            local_s3_s = run.seconds(LOCAL_S3_RUN, *names)
            s3 = step_info(LOCAL_S3_RUN, names[0]).get("s3") if len(names) == 1 else None
            note = inside(LOCAL_S3_RUN, names, reference)
            summary.append({"step": label, "engine": f"local[{args.cores}], warehouse on S3 (lakecompact CLI)",
                            "seconds": local_s3_s, "ratio": ratio_of(local_s3_s, local_s),
                            "note": "; ".join(filter(None, [note, _s3_note(s3)])), "run": LOCAL_S3_RUN,
                            "steps": names})
        s3 = step_info(CLUSTER_RUN, names[0]).get("s3") if len(names) == 1 else None
        note = inside(CLUSTER_RUN, names, reference)
        summary.append({"step": label, "engine": "spark-submit on the cluster, warehouse on S3",
                        "seconds": cluster_s, "ratio": ratio_of(cluster_s, local_s),
                        "note": "; ".join(filter(None, [note, _s3_note(s3)])), "run": CLUSTER_RUN, "steps": names})
    headline = ratio_of(run.seconds(CLUSTER_RUN, "compact v2"), run.seconds(LOCAL_RUN, "compact v2"))
    goal = 1.5
    copies = [step_info(CLUSTER_RUN, s).get("s3") or {} for s in steps]
    data_copies = sum(len(s.get("copies_data", [])) for s in copies)
    other_copies = sum(len(s.get("copies_other", [])) for s in copies)
    run.notes += [
        (f"Headline: compact v2 (the change's compaction) on the S3 cluster over the local one: {fmt(headline)}× "
         f"(goal: at most {goal}×: {'met' if headline is not None and headline <= goal else 'NOT met'}). COPY requests "
         f"over the timed steps: {data_copies} of data files (.parquet; goal 0), {other_copies} of others."),
        (f"Each step is one whole process, JVM start included. Local: `lakecompact --config lake.toml <command>` on "
         f"local[{args.cores}] (spark.driver.memory {args.driver_memory}), the warehouse and its embedded metastore on "
         "the local disk. Cluster: `spark-submit --master spark://127.0.0.1:19077 --deploy-mode client … "
         "lakecompact/__main__.py --config lake.toml <command>` on the stack's two workers of 1 core each "
         f"(spark.executor.memory {args.executor_memory}, executors without Python; driver {args.driver_memory}), the "
         f"warehouse s3a://lake/{prefix}warehouse on the stack's S3Proxy 4.0.0 (filesystem store, same disk) through "
         "the S3A magic committer, the tables in the stack's Hive metastore. Both read the same local event files; "
         f"spark.sql.shuffle.partitions = {args.shuffle_partitions} in both. \"inside\": the time lakecompact reports "
         "itself (`lakecompact <command>: finished in`, from its Python's start); \"itself\": the times of its "
         "`land: batch …` / `compact <table>: …` lines, without the session's start and the locks and metastore "
         "around them. Ratios are to the local run."),
        *([(f"{LOCAL_S3_RUN}: `lakecompact --config lake.toml <command>` on local[{args.cores}] as the local run, "
            "with the warehouse on the stack's S3 and the tables in its metastore, as the cluster run (--local-s3): "
            "what S3 costs apart from the cluster.")] if LOCAL_S3_RUN in run.runs else []),
        ("S3 requests: from S3Proxy's request log between two marks around each process, this run's only (keys under "
         "its prefix, listings of it, and the bucket-level requests that name no key such as DeleteObjects); a copy "
         "is a request with x-amz-copy-source (CopyObject, UploadPartCopy)."),
        (f"Every run here is lakecompact on the Spark of the stack's cluster (the main environment's pyspark "
         f"{spark_version(sys.executable) or 'unknown'}), locally too, not on .bench/venv41's Spark as in the other "
         "scenarios: the cluster's workers run that Spark, and local and cluster compare on one."),
        ("Peers (Delta, Iceberg, Hudi): not run on S3 here. Their builds (benchmarks/pom.xml) are for .bench/venv41's "
         "Spark 4.1 and cannot run on the stack's cluster, which runs the main environment's Spark; benchmarks/pom.xml "
         "has no s3a profile for them, and their engine (benchmarks/engines/peers.py) puts its tables under a local "
         "work folder. Their local numbers for the same data are in merge.md."),
    ]
    extra = s3_tables(run.runs, steps, whole)
    run.write(f"cluster: lakecompact on the stack's Spark cluster with the warehouse on S3 vs local[{args.cores}], "
              f"{n:,} rows + a change of {c:,} events", summary, run.correctness("duckdb"),
              "the same step on local[2] with a local warehouse", extra)
