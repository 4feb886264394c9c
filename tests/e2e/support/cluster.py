"""lakecompact as users run it on a cluster: `spark-submit` in client mode on the stack's Spark standalone cluster
(`stack.py up cluster`), the warehouse on the stack's S3 (`s3a://lake/…`, `stack.py up s3`), the stack's shared Hive
metastore; and what the tests read back: the views through Spark's Thrift server (beeline), the bucket's keys and
the S3 server's request log.

Nothing here imports Spark: every Spark run is a process of its own (spark-submit), so that the suite's one
SparkContext is left alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lakecompact
from stack.processes import cmdline as _cmdline  # the stack's own /proc readers
from stack.processes import descendants as _descendants
from tests.e2e.support.columns import Column, Table, canonical
from tests.e2e.support.common import say
from tests.e2e.support.comparison import Comparison, compare_rows
from tests.e2e.support.sources import SourceDb
from tests.support.poll import poll as support_poll

MAIN = Path(lakecompact.__file__).resolve().parent / "__main__.py"  # the entry point spark-submit runs
# short-lived JVMs on two cores: C2's compilations would take a core from the tasks (docs/configuration.md "Spark and JVM settings": what
# lakecompact itself gives a one-shot command's JVM on a local master)
C1_ONLY = "-XX:TieredStopAtLevel=1"
_TAKEN_OVER = re.compile(r"^warning: (\S+) was left by a process that is gone \(pid (\d+) on .*\); taking it over$")


# -- the metastore ---------------------------------------------------------------------------------------------
def _metastore_reads_s3(stack) -> bool:
    pid = stack.component("metastore").pid()
    return bool(pid) and "hadoop-aws" in stack.cmdline(pid)


@contextmanager
def metastore_reading_s3(stack) -> Iterator[None]:
    """The stack's metastore with the s3a client (Hive makes the folder of every database, table and partition it
    registers, on s3a:// too): restarted when it runs without it (started by an older stack.py)."""
    if not _metastore_reads_s3(stack):
        say("restarting the stack's metastore: it runs without the s3a client")
        stack.stop_metastore()
        stack.start_metastore()
    assert _metastore_reads_s3(stack), "the stack's metastore runs without the s3a client: run scripts/stack/install.sh"
    yield


def thriftserver_reading_s3(stack) -> bool:
    """Spark's Thrift server up with the s3a client (restarted when it runs without it); True when this started
    it."""
    status = stack.status()["thriftserver"]
    if status["pid"] and not stack.thriftserver_reads_s3():
        say("restarting Spark's Thrift server to read s3a://")
        stack.stop_thriftserver()
    started = not stack.status()["thriftserver"]["ready"]
    stack.up(components=["thriftserver", "s3"])
    assert stack.thriftserver_reads_s3(), "the Thrift server runs without the s3a client"
    return started


# -- the lake's config -----------------------------------------------------------------------------------------
def s3_lake_toml(stack, path: Path, run: str, database: str, topics: list[str] | None = None,
                 events: Path | None = None) -> Path:
    """lake.toml of a lake on the stack's S3 (`s3a://lake/<run>/warehouse`) and the stack's metastore; its source
    the stack's Kafka (`topics`), or the files `events`."""
    source = (f'kind = "files"\npaths = ["{events}"]' if events is not None else
              f'kind = "kafka"\nbootstrap_servers = "{stack.KAFKA_BOOTSTRAP}"\ntopics = {json.dumps(topics)}')
    path.write_text(f'''\
warehouse = "s3a://{stack.S3_BUCKET}/{run}/warehouse"
database = "{database}"
[metastore]
uri = "{stack.METASTORE_URI}"
[s3]
endpoint = "{stack.S3_ENDPOINT}"
region = "{stack.S3_REGION}"
path_style_access = true
access_key = "{stack.S3_ACCESS_KEY}"
secret_key = "{stack.S3_SECRET_KEY}"
[source]
{source}
[defaults]
buckets = 2
[spark.conf]
"spark.sql.shuffle.partitions" = "2"
''')
    return path


# -- spark-submit ----------------------------------------------------------------------------------------------
def submit_command(stack, config: Path, *args: str, cores: int | None = None) -> list[str]:
    """The spark-submit command line of `lakecompact --config config *args` on the stack's cluster
    (`stack.spark_submit_command`), with the Kafka source's jars and C1 only. `cores`: spark.cores.max (None: all
    the cluster's)."""
    return [*stack.spark_submit_command(java_options=C1_ONLY, jars=stack.spark_kafka_jars() + stack.spark_avro_jars(),
                                        cores=cores),
            str(MAIN), "--config", str(config), *args]


def submit_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "LAKECOMPACT_KILL_AT", "LAKECOMPACT_STOP_AT",
                        "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", LAKECOMPACT_SPARK_LOG_LEVEL="ERROR", **extra)
    return env


@dataclass
class Job:
    """One spark-submit of lakecompact, its output in files (read while it runs)."""

    name: str
    args: tuple[str, ...]
    process: subprocess.Popen
    out: Path
    err: Path
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0

    @property
    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def lakecompact_lines(self) -> list[str]:
        """lakecompact's warnings and errors, without Spark's log: spark-submit's PythonRunner merges the driver's
        Python stderr into its stdout, so they are there (and Spark's own log on stderr)."""
        return [line for line in (self.stdout + self.stderr).splitlines()
                if line.startswith(("lakecompact:", "warning:"))]

    def taken_over(self) -> list[tuple[str, int]]:
        """(lock, pid) of each lock this driver took over from a process that is gone, from its warnings."""
        return [(m[1], int(m[2])) for line in self.lakecompact_lines() if (m := _TAKEN_OVER.match(line))]

    def wait(self, timeout: float = 420) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name}: {self.args} still ran after {timeout:.0f}s:\n{self.tail()}") from None
        self.seconds = time.monotonic() - self.started
        return code

    def finish(self, timeout: float = 420, expect: int = 0) -> Job:
        code = self.wait(timeout)
        assert code == expect, f"{self.name}: {self.args} exited {code}, not {expect}:\n{self.tail()}"
        say(f"{self.name}: exited {code} in {self.seconds:.0f}s: {' | '.join(self.stdout.splitlines()[:8])}")
        return self

    def tail(self) -> str:
        return f"stdout:\n{self.stdout[-3000:]}\nstderr (last lines):\n" + "\n".join(self.stderr.splitlines()[-40:])

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.seconds = time.monotonic() - self.started

    def kill_when_stopped(self, timeout: float = 300) -> int:
        """Wait until the driver stopped itself at its LAKECOMPACT_STOP_AT step, then kill -9 the driver, its JVM
        and its Python, as a crash right there would; the pid of the driver's Python (what its lock names)."""
        poll(self.stopped, timeout, f"{self.name} stopped at its step", self)
        pid = self.driver_python()
        self.kill()
        say(f"{self.name}: killed (kill -9, driver JVM and Python) where it stopped")
        return pid

    def resume(self) -> None:
        """Continue a driver stopped at its LAKECOMPACT_STOP_AT step."""
        os.kill(self.driver_python(), signal.SIGCONT)

    def stopped(self) -> bool:
        """The driver's Python stopped itself (SIGSTOP) at its LAKECOMPACT_STOP_AT step."""
        driver = self.driver_python()
        if driver is None:
            return False
        try:
            return Path(f"/proc/{driver}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    def driver_python(self) -> int | None:
        """The pid of the driver's Python (spark-submit's JVM starts it as its child)."""
        for pid in _descendants(self.process.pid):
            if str(MAIN) in _cmdline(pid) and "java" not in _cmdline(pid).split(" ")[0]:
                return pid
        return None


def submit(stack, folder: Path, name: str, config: Path, *args: str, cores: int | None = None,
           **env: str) -> Job:
    """Start `lakecompact --config config *args` by spark-submit; its stdout and stderr go to folder/name.*.
    A process group of its own: the kill of a test takes the JVM and the driver's Python together."""
    return start(folder, name, submit_command(stack, config, *args, cores=cores), args, **env)


def start(folder: Path, name: str, command: list[str], args: tuple[str, ...], **env: str) -> Job:
    """Start a spark-submit command line as `submit` does; `args`: lakecompact's, for the job's messages."""
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    (folder / f"{name}.command").write_text(shlex.join(command) + "\n")
    with open(out, "w") as out_file, open(err, "w") as err_file:
        process = subprocess.Popen(command, stdout=out_file, stderr=err_file, env=submit_env(**env), cwd=folder,
                                   start_new_session=True)
    say(f"{name}: spark-submit … lakecompact {' '.join(args)}" + (f" ({', '.join(f'{k}={v}' for k, v in env.items())})" if env else ""))
    return Job(name, args, process, out, err)


def poll(check: Callable[[], Any], timeout: float, what: str, job: Job | None = None, interval: float = 0.25) -> Any:
    """Call `check` until it returns something truthy (returned); fails after `timeout`, or at once when `job`
    exited."""
    if job is None:
        return support_poll(check, timeout, what, interval=interval)

    def gone() -> str | None:
        return None if job.process.poll() is None else f"{job.name} exited {job.process.returncode}:\n{job.tail()}"

    return support_poll(check, timeout, what, interval=interval, gone=gone, detail=job.tail)


# -- the demo's first events ----------------------------------------------------------------------------------
# examples/events/part-1.jsonl as the views show it: key 3 deleted, key 1's TOAST placeholder resolved
DEMO_PART_1 = [
    ["customers", 1, "sally.t@example.com", True], ["customers", 2, "gbailey@example.com", True],
    ["customers", 4, "annek@example.com", True],
    ["orders", 10, "shipped", True], ["orders", 11, "placed", True], ["orders", 12, "placed", True],
    ["orders", 13, "placed", True],
]


def demo_part_1_query(database: str) -> str:
    """The `sql` that reads both views of a lake of the demo's first events, as demo_part_1_rows takes it."""
    return (f"SELECT 'customers' AS t, id AS k, email AS v, bio LIKE 'Grew up by the sea.%' AS ok "
            f"FROM `{database}`.public_customers UNION ALL "
            f"SELECT 'orders', order_id, status, true FROM `{database}`.shop_orders ORDER BY t, k")


def demo_part_1_rows(job: Job) -> list[list]:
    """The rows a `sql` job of demo_part_1_query printed, as DEMO_PART_1 writes them."""
    rows = [json.loads(line) for line in job.stdout.splitlines() if line.startswith("{")]
    return [[row["t"], row["k"], row["v"], row["ok"]] for row in rows]


# -- the views through the Thrift server -------------------------------------------------------------------------
def _read_expression(column: Column, spark_type: str) -> str:
    """The column as comparison.canonical_view_rows reads it (timestamps to microseconds, exact decimals)."""
    name = f"`{column.name}`"
    if spark_type == "timestamp":
        return f"date_format({name}, 'yyyy-MM-dd HH:mm:ss.SSSSSS')"
    if column.kind.split(":")[0] in ("dec", "date"):
        return f"CAST({name} AS STRING)"
    return name


_END = "-- lakecompact e2e: end of a result --"


def beeline_results(stack, statements: list[str]) -> list[list[list[str]]]:
    """The rows of each statement, run by one beeline (one JVM start) through the Thrift server."""
    rows = stack.beeline("; ".join(f"{statement}; SELECT '{_END}'" for statement in statements))
    results: list[list[list[str]]] = [[]]
    for row in rows:
        if row == [_END]:
            results.append([])
        else:
            results[-1].append(row)
    assert len(results) == len(statements) + 1 and not results[-1], rows[-5:]
    return results[:-1]


def _types(described: list[list[str]]) -> dict[str, str]:
    types = {}
    for row in described:
        if not row or not row[0].strip() or row[0].startswith("#"):
            break
        types[row[0].strip()] = row[1].strip()
    return types


def beeline_views(stack, database: str, views: dict[str, list[Column]],
                  expected_types: Callable[[Column], str]) -> dict[str, tuple[list[dict], dict[str, str]]]:
    """Each view's rows in canonical form and its column types, read by one beeline run (one JVM start) through
    Spark's Thrift server: one JSON object a row (to_json, so that no value's tab or line break splits a row), each
    column read as its expected type asks (a timestamp to the microsecond); the types read are compared by the
    caller."""
    names = list(views)
    selects = []
    for name in names:
        fields = ", ".join(f"'{c.name}', {_read_expression(c, expected_types(c))}" for c in views[name])
        selects.append(f"SELECT to_json(named_struct({fields})) FROM `{database}`.`{name}`")
    results = beeline_results(stack, [f"DESCRIBE `{database}`.`{name}`" for name in names] + selects)
    out = {}
    for n, name in enumerate(names):
        parsed = [json.loads("\t".join(row)) for row in results[len(names) + n]]
        out[name] = ([{c.name: canonical(c, row.get(c.name)) for c in views[name]} for row in parsed],
                     _types(results[n]))
    return out


def compare_through_thrift(stack, database: str, db: SourceDb, tables: list[Table], stage: str,
                           expected_types: Callable[[Column], str]) -> list[Comparison]:
    """Every table's view, read through the Thrift server, against the source table (as
    comparison.compare_with_source does with the suite's Spark session)."""
    results = []
    read = beeline_views(stack, database, {db.lake_table(t.name): list(t.columns) for t in tables}, expected_types)
    for table in tables:
        lake_table = db.lake_table(table.name)
        source_rows = db.rows(table)
        lake_rows, types = read[lake_table]
        comparison = Comparison(stage, db.kind, table, lake_table, len(source_rows), len(lake_rows))
        expected = {c.name: expected_types(c) for c in table.columns}
        actual = {c.name: types.get(c.name) for c in table.columns}
        if actual != expected:
            comparison.type_problem = f"{actual} != expected {expected}"
        compare_rows(table, source_rows, lake_rows, comparison)
        say(f"{stage}: {database}.{lake_table} {'equals' if comparison.equal else 'DIFFERS FROM'} {db.kind} "
            f"{db.qualified(table.name)} (through the Thrift server): {comparison.source_rows} source rows, "
            f"{comparison.view_rows} view rows")
        results.append(comparison)
    return results


# -- the bucket ----------------------------------------------------------------------------------------------
def bucket_keys(stack, prefix: str) -> list[str]:
    """Every key of the stack's bucket under `prefix` (ListObjectsV2, page by page)."""
    keys: list[str] = []
    token = None
    while True:
        params = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
        if token:
            params["continuation-token"] = token
        listed = stack.s3_request("GET", params=params)
        assert listed.status_code == 200, listed.text[:500]
        keys += [re.sub(r"&amp;", "&", key) for key in re.findall(r"<Key>([^<]*)</Key>", listed.text)]
        token_match = re.search(r"<NextContinuationToken>([^<]*)</NextContinuationToken>", listed.text)
        if "<IsTruncated>true</IsTruncated>" not in listed.text or not token_match:
            return keys
        token = token_match[1]


def pending_multipart_uploads(stack, prefix: str) -> list[str]:
    """Keys of multipart uploads begun and neither completed nor aborted under `prefix`."""
    listed = stack.s3_request("GET", params={"uploads": "", "prefix": prefix})
    assert listed.status_code == 200, listed.text[:500]
    return re.findall(r"<Key>([^<]*)</Key>", listed.text)


_VERSION = re.compile(r"/(base|changes)/v=(\d+)/")


def orphans(keys: list[str], table_prefix: str, version: int) -> list[str]:
    """Objects of a table that no committed state accounts for: a base or change-feed version above `version`
    (the current manifest's), staging folders, scratch files and the magic committer's leftovers."""
    found = []
    for key in keys:
        rest = key[len(table_prefix):]
        if (match := _VERSION.search("/" + rest)) and int(match[2]) > version or any(part in ("_staging", "__magic", "_temporary") or part.startswith("__magic")
                 for part in rest.split("/")) or key.endswith(".tmp") or ".pending" in key:
            found.append(key)
    return found


def manifest_version(keys: list[str], table_prefix: str) -> int:
    """The table's current version: its highest manifest (0: none)."""
    found = [int(m[1]) for key in keys if (m := re.fullmatch(re.escape(table_prefix) + r"_state/manifests/(\d+)\.json", key))]
    return max(found, default=0)


def copies(log: list) -> dict[str, list[str]]:
    """The copies (CopyObject, UploadPartCopy) among the requests S3 served: {"data": [...parquet keys],
    "other": [...]}."""
    done = [r for r in log if r.copy_source is not None]
    return {"data": [r.key for r in done if r.key.endswith(".parquet") or ".parquet" in r.copy_source],
            "other": [f"{r.op} {r.copy_source} -> {r.key}" for r in done
                      if not (r.key.endswith(".parquet") or ".parquet" in r.copy_source)]}


def drop_lake(stack, database: str, prefix: str) -> None:
    """Drop a lake's database (through the Thrift server: the metastore deletes its folders) and delete what is left
    of its objects."""
    stack.beeline(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
    delete_objects(stack, prefix)


def delete_objects(stack, prefix: str) -> None:
    for key in bucket_keys(stack, prefix):
        stack.s3_request("DELETE", key)


# -- the cluster ----------------------------------------------------------------------------------------------
def application_of(job: Job) -> str | None:
    """The application id of a driver, from its Spark log ("Connected to Spark cluster with app ID …")."""
    match = re.search(r"Connected to Spark cluster with app ID (app-[\w-]+)", job.stderr)
    return match[1] if match else None


def worker_runs_tasks(stack, n: int, app: str) -> bool:
    """An executor of `app` on worker n has started a task."""
    logs = (stack.CLUSTER_DIR / f"work{n}" / app).glob("*/stderr")
    return any("Running task" in log.read_text(errors="replace") for log in logs)


def running_apps(stack) -> list[dict]:
    return stack.cluster_state().get("activeapps", [])


def executors_of(stack, app: str) -> list[tuple[int, str]]:
    """(worker, executor id) of every executor the application had: the folders its executors got in the
    workers' work dirs (which outlive a killed worker)."""
    return sorted((n, folder.name) for n in range(1, stack.SPARK_WORKERS + 1)
                  for folder in (stack.CLUSTER_DIR / f"work{n}" / app).glob("*") if folder.is_dir())
