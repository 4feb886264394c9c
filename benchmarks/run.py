"""lakecompact against Delta, Iceberg, Hudi, DuckDB and delta-rs, on the same event files in the same run.

    bash benchmarks/setup.sh                        # once: .bench/venv41 (pyspark 4.1 + lakecompact), .bench/jars
    nice -n 10 python benchmarks/run.py merge [--rows 1000000] [--change-rows 100000] [--engines a,b]
    nice -n 10 python benchmarks/run.py change-size | base-scaling | landing | view-read | history | small-command
    nice -n 10 python benchmarks/run.py cluster
    nice -n 10 python benchmarks/run.py verify                             # the stack's PostgreSQL
    nice -n 10 python benchmarks/run.py landing-schemaless | landing-avro   # landing-avro: the stack's Kafka
    python benchmarks/run.py report                 # docs/performance.md from the results, running nothing

Every engine runs with .bench/venv41's Python: lakecompact (in-process and its CLI), the raw Spark reference and
the peers all on its pyspark 4.1, the Spark line the peers publish builds for; the results name each run's Spark.
Only the `cluster` scenario keeps lakecompact on the project's main environment's Spark, the one the stack's
cluster runs: run it with that environment's Python (any Python 3.11+ will do for the other scenarios).
Every engine is its own process, one at a time, on local[2] with the same driver memory; each reports its own
step times (JVM start excluded) and this harness the process's wall time and peak memory. After the change every
engine's table is checked (live rows, sum(score), a checksum of md5(id|name|score|bio)) against the DuckDB
reference and the others; a mismatch is printed and marked. A peer whose build is missing (Hudi has none for
Spark 4) is reported as not run, with the reason.
Results: benchmarks/results/<scenario>.{json,md,png}, and docs/performance.md (benchmarks/report.py) made again
from all of them after every scenario. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from generate import TOPIC, TS0, avro_schema, key_schema, value_schema  # benchmarks/generate.py, beside it
from report import write_page as write_performance_page  # benchmarks/report.py, beside this file

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENGINES_DIR = HERE / "engines"
BENCH = Path(os.environ.get("BENCH_DIR", ROOT / ".bench"))
VENV_PYTHON = BENCH / "venv41" / "bin" / "python"
JARS = BENCH / "jars"
RESULTS = HERE / "results"
SCENARIOS = ("merge", "change-size", "base-scaling", "landing", "landing-schemaless", "landing-avro", "landing-topics",
             "view-read", "history", "small-command", "cluster", "verify")
PEERS = ("delta", "delta-dv", "iceberg-cow", "iceberg-mor", "hudi-cow", "hudi-mor")
PEER_JARS = {peer: peer.split("-")[0] for peer in PEERS}  # .bench/jars/<profile of benchmarks/pom.xml>
# view-read: the peers whose reads meet pending changes (delete files, deletion vectors) as lakecompact's view does
VIEW_READ_PEERS = ("iceberg-mor", "delta-dv")
ALL_ENGINES = ("lakecompact", "lakecompact-cli", "raw-spark", *PEERS, "duckdb", "delta-rs")
DEFAULT_MERGE_ENGINES = ("lakecompact", "lakecompact-cli", "raw-spark", "delta", "iceberg-cow", "iceberg-mor",
                         "hudi-cow", "duckdb", "delta-rs")
VIEW = "lake.public_customers"
CHECK_SQL = (
    "count(*) AS rows, sum(score) AS score_sum, "
    "sum(CAST(conv(substr(md5(concat_ws('|', CAST(id AS STRING), name, CAST(score AS STRING), bio)), 1, 8), 16, 10)"
    " AS BIGINT)) AS checksum"
)
READ_SQL = f"SELECT count(*), sum(score) FROM {VIEW}"
NOISY = 0.25  # share of the CPUs used by other processes above which a run's numbers are marked


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def loud(message: str) -> None:
    bar = "!" * 100
    print(f"\n{bar}\n!!! {message}\n{bar}\n", file=sys.stderr, flush=True)


# -- the machine ---------------------------------------------------------------------------------------------
def machine() -> dict:
    def first(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            return None

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    commit = first(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "lakecompact"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(), "memory_gib": round(mem_kb / 1024 / 1024, 1), "cpu": cpu,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "java": first(["java", "-version"]), "python": platform.python_version(),
        "lakecompact_commit": f"{commit}{' + uncommitted changes in lakecompact/' if dirty else ''}",
    }


# -- processes -----------------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by pid and its descendants that are still running (python + its JVM + the JVM's
    Python workers): a step's own CPU, less sensitive than its wall time to other processes on the machine."""
    tree, todo, ticks = _children(), [pid], 0
    while todo:
        p = todo.pop()
        ticks += _cpu_ticks(p)
        todo.extend(tree.get(p, []))
    return ticks / os.sysconf("SC_CLK_TCK")


def _memory_kb(pid: int) -> tuple[int, int]:
    rss = hwm = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def wait_for_quiet(max_wait: float, threshold: float = 0.35) -> float:
    """Wait (up to max_wait s) until other processes use less than `threshold` of the machine's CPUs over 5 s;
    returns the share seen last. The machine is shared (another engineer's test suite): this keeps the runs apart."""
    deadline = time.monotonic() + max_wait
    while True:
        busy0, total0 = _cpu_jiffies()
        time.sleep(5)
        busy1, total1 = _cpu_jiffies()
        share = (busy1 - busy0) / max(1, total1 - total0)
        if share < threshold or time.monotonic() > deadline:
            return round(share, 2)
        log(f"machine busy ({share:.0%} of the CPUs used by other processes): waiting")


def run_process(cmd: list[str], log_path: Path, env: dict | None = None, timeout: float = 4 * 3600,
                stdout_path: Path | None = None) -> dict:
    """Run cmd (its own process group); wall time, exit code, and the peak memory of its process tree
    (python + the JVM it starts): the sampled peak of the summed RSS, and the sum of each process's VmHWM.
    other_cpu_share: the part of the machine's CPU time during the run that other processes used (noise)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    busy0, total0 = _cpu_jiffies()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    full_env.update(env or {})
    # this checkout's lakecompact, which the results name, not the clone `pip install -e` last pointed at
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
    with open(log_path, "w") as err, open(stdout_path or log_path.with_suffix(".out"), "w") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=full_env, cwd=str(ROOT), start_new_session=True)
        peak_rss, hwm, ticks, status, rusage = 0, {}, {}, None, None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            tree, todo, total = _children(), [proc.pid], 0
            while todo:
                p = todo.pop()
                rss, h = _memory_kb(p)
                total += rss
                hwm[p] = max(hwm.get(p, 0), h)
                ticks[p] = max(ticks.get(p, 0), _cpu_ticks(p))
                todo.extend(tree.get(p, []))
            peak_rss = max(peak_rss, total)
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, 9)
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    busy1, total1 = _cpu_jiffies()
    tick = os.sysconf("SC_CLK_TCK")
    ours = max(rusage.ru_utime + rusage.ru_stime, sum(ticks.values()) / tick)  # the JVM is not always reaped
    machine_busy = (busy1 - busy0) / tick
    other = max(0.0, machine_busy - ours) / max(1e-9, (total1 - total0) / tick)
    return {"rc": proc.returncode, "seconds": round(seconds, 3), "cpu_seconds": round(ours, 1),
            "other_cpu_share": round(other, 2), "peak_rss_mb": round(peak_rss / 1024),
            "peak_hwm_sum_mb": round(sum(hwm.values()) / 1024), "python_maxrss_mb": round(rusage.ru_maxrss / 1024),
            "log": str(log_path.relative_to(ROOT)) if log_path.is_relative_to(ROOT) else str(log_path),
            "log_path": str(log_path)}


@functools.cache
def spark_version(python: str | Path) -> str | None:
    """The pyspark version that `python` imports (the Spark its lakecompact CLI or spark-submit runs on)."""
    found = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True,
                           text=True, check=False, timeout=120)
    return (found.stdout.strip() or None) if found.returncode == 0 else None


def unavailable(engine: str) -> str | None:
    """Why a peer cannot run: its jars missing (setup.sh records why Maven had none), else None."""
    folder = JARS / PEER_JARS[engine]
    if any(folder.glob("*.jar")):
        return None
    why = folder / ".unavailable"
    lines = why.read_text().splitlines() if why.exists() else []
    return lines[1] if len(lines) > 1 else f"no jars in {folder}: run `bash benchmarks/setup.sh`"


# -- data ------------------------------------------------------------------------------------------------
def _generator_hash() -> str:
    """The generator's VERSION: cached data sets are made again when it changes."""
    found = re.search(r"^VERSION = (\d+)", (HERE / "generate.py").read_text(), re.MULTILINE)
    return f"v{found.group(1) if found else 0}"


def dataset(name: str, kind: str, rows: int, args, fresh: bool = False, **extra) -> dict:
    """The kcat files of one snapshot or change, generated once and kept under .bench/data/NAME (`fresh`: the
    generator asked again, for data it keeps elsewhere and checks itself: a Kafka topic)."""
    out = BENCH / "data" / name
    want = {"kind": kind, "rows": rows, "events_per_file": args.events_per_file, "generator": _generator_hash(),
            **{k: v for k, v in extra.items()}}
    meta_path = out / "meta.json"
    if meta_path.exists() and not fresh:
        meta = json.loads(meta_path.read_text())
        if meta.get("want") == want:
            return meta
    cmd = [str(VENV_PYTHON), str(HERE / "generate.py"), kind, str(out), "--rows", str(rows),
           "--events-per-file", str(args.events_per_file)]
    for key, value in extra.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    log(f"generating {name}: {kind} of {rows:,} events")
    result = run_process(cmd, BENCH / "logs" / f"generate-{name}.log", stdout_path=BENCH / "logs" / f"generate-{name}.out")
    if result["rc"]:
        raise SystemExit(f"generation failed: see {result['log']}")
    meta = json.loads(meta_path.read_text())
    meta["want"] = want
    meta["glob"] = str(out / "*.jsonl")
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"  {name}: {meta['files']} files, {meta['bytes'] / 1e9:.2f} GB in {meta['seconds']}s")
    return meta


def change_after(name: str, previous: dict, rows: int, args, key_lo: int, key_hi: int, salt: int) -> dict:
    return dataset(name, "change", rows, args, key_lo=key_lo, key_hi=key_hi, salt=salt,
                   first_offset=previous["next_offset"], first_lsn=previous["next_lsn"],
                   insert_start=previous["next_insert"])


# -- engines ---------------------------------------------------------------------------------------------
class Run:
    """One scenario's runs, results and report."""

    def __init__(self, scenario: str, args):
        self.scenario, self.args = scenario, args
        self.name = args.name or scenario  # of the results files, the logs and the work folder
        self.results = args.results_dir
        self.work = BENCH / "work" / self.name
        self.runs: dict[str, dict] = {}
        self.notes: list[str] = []
        self.failures: list[str] = []
        self.cli_driver_memory: str | None = None  # the CLI runs' spark.driver.memory, when not --driver-memory
        self.lake_sections: dict[str, dict] = {}  # lake.toml sections instead of the files source: [source], [registry]
        self.spark_conf: dict[str, str] = {}  # lake.toml [spark.conf] entries beside the common ones
        self.table_defaults: dict = {}  # [defaults] settings of the lakes made from here on, e.g. row_history
        self._params: dict = {}

    @property
    def params(self) -> dict:
        """Set by the scenario before its runs: what a reused run must match."""
        return self._params

    @params.setter
    def params(self, value: dict) -> None:
        self._params = {**value, **({"merge_on_read": True} if self.args.merge_on_read else {})}

    def common_spec(self) -> dict:
        return {"master": f"local[{self.args.cores}]", "driver_memory": self.args.driver_memory,
                "shuffle_partitions": self.args.shuffle_partitions, "jars": str(JARS),
                "threads": self.args.cores}

    def reused(self, run_name: str, spark: str | None = None) -> bool:
        """--reuse: take this run from the scenario's last results file (same parameters) instead of running it.
        spark: the Spark version the run would have now; a run measured on another is run again (--report-only
        takes every run as it was)."""
        if run_name not in self.args.reuse_runs:
            return False
        previous = self.results / f"{self.name}.json"
        doc = json.loads(previous.read_text()) if previous.exists() else {}
        if run_name not in doc.get("runs", {}) or doc.get("params") != self.params:
            log(f"{run_name}: nothing to reuse (no earlier run with the same parameters): running it")
            return False
        result = doc["runs"][run_name]
        if not self.args.report_only:
            was = result.get("info", {}).get("spark_version")
            if spark and was != spark:
                log(f"{run_name}: measured on Spark {was or 'unknown'}, would run on {spark} now: running it")
                return False
            if result.get("not_run"):
                return False  # its jars may be there by now
        result["steps"] = [{"step": s["step"], "seconds": s["seconds"], "info": s.get("info", {})}
                           for s in doc["steps"] if s["run"] == run_name]
        result["reused_from"] = when = result.get("reused_from") or doc["machine"]["date"]
        self.runs[run_name] = result
        if result.get("error"):
            self.failures.append(f"{run_name}: {result['error'].splitlines()[0][:300]} (reused)")
        if result.get("not_run"):
            self.notes.append(f"{run_name}: not run: {result['not_run']}.")
        log(f"{run_name}: reused from the run of {when}")
        self.notes.append(f"{run_name}: measured in the run of {when} (reused with --reuse).")
        return True

    def engine(self, run_name: str, engine: str, ops: list[dict], *, work: Path | None = None,
               **spec_extra) -> dict:
        """Run one engine process on `ops`; its result (steps, checks, error) with the process's numbers.
        work: a folder the caller owns, whose tables outlive the process (for another process to go on with);
        default a new folder of this run, emptied afterwards unless --keep-work."""
        uses_spark = engine not in ("duckdb", "delta-rs")
        if self.reused(run_name, spark_version(VENV_PYTHON) if uses_spark else None):
            return self.runs[run_name]
        if engine in PEERS and (why := unavailable(engine)):
            return self.not_run(run_name, engine, why)
        owned = work is None
        work = work or self.work / run_name.replace("@", "-").replace("=", "")
        if owned:
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        spec = {**self.common_spec(), "engine": engine, "work": str(work), "ops": ops, **spec_extra}
        if engine == "lakecompact":
            script = "lakecompact_inproc.py"
            spec.setdefault("lake", self.lake_settings(work / "warehouse"))
        elif engine == "raw-spark":
            script = "raw_spark.py"
        elif engine in PEERS:
            script = "peers.py"
        elif engine in ("duckdb", "delta-rs"):
            script = "native_refs.py"
        else:
            raise SystemExit(f"unknown engine {engine}")
        spec_path, result_path = work / "spec.json", work / "result.json"
        spec_path.write_text(json.dumps(spec, indent=1))
        if self.args.quiet_wait:
            wait_for_quiet(self.args.quiet_wait)
        log(f"{run_name}: running ({engine})")
        process = run_process([str(VENV_PYTHON), str(ENGINES_DIR / script), str(spec_path), str(result_path)],
                              BENCH / "logs" / self.name / f"{run_name}.log", timeout=self.args.timeout)
        result = json.loads(result_path.read_text()) if result_path.exists() else {
            "engine": engine, "steps": [], "checks": {}, "error": "the process wrote no result", "info": {}}
        if process["rc"] and not result.get("error"):
            result["error"] = f"exit code {process['rc']} (see {process['log']})"
        result["process"] = process
        result["run"] = run_name
        self.runs[run_name] = result
        if result.get("error"):
            self.failures.append(f"{run_name}: {result['error'].splitlines()[0][:300]} (log: {process['log']})")
            loud(f"{run_name} FAILED: {result['error'][:500]}\n    log: {process['log']}")
        else:
            log(f"{run_name}: done in {process['seconds']:.1f}s (peak RSS {process['peak_rss_mb']} MB)")
        if owned and not self.args.keep_work:
            for sub in work.iterdir():
                if sub.is_dir():
                    shutil.rmtree(sub, ignore_errors=True)
        return result

    def cold_merge(self, peer: str, snapshot: dict, change: dict, step: str) -> None:
        """The peer's MERGE as spark-submit per step runs it: the table loaded by one process (run
        `<peer> (own JVM) load`), the change merged by a JVM of its own (run `<peer> (own JVM) <step>`)."""
        table = self.work / f"{peer}-own-jvm"
        shutil.rmtree(table, ignore_errors=True)
        for run_name, ops in [
            (f"{peer} (own JVM) load", [{"op": "load", "paths": [snapshot["glob"]], "step": "load snapshot"}]),
            (f"{peer} (own JVM) {step}", [{"op": "merge", "paths": [change["glob"]], "step": step},
                                          {"op": "check", "name": f"after change [{peer}, own JVM]"}]),
        ]:
            if self.engine(run_name, peer, ops, work=table).get("error"):
                break
        if not self.args.keep_work:
            shutil.rmtree(table, ignore_errors=True)

    def not_run(self, run_name: str, engine: str, why: str) -> dict:
        """A run that cannot be made here, kept in the results with the reason (its rows say "not run")."""
        result = {"engine": engine, "run": run_name, "steps": [], "checks": {}, "error": None, "not_run": why,
                  "info": {}, "process": {}}
        self.runs[run_name] = result
        self.notes.append(f"{run_name}: not run: {why}.")
        loud(f"{run_name}: NOT RUN: {why}")
        return result

    def lake_settings(self, warehouse: Path) -> dict:
        return {"warehouse": str(warehouse), "database": "lake", "buckets": self.args.buckets,
                "defaults": {"merge_on_read": self.args.merge_on_read, **self.table_defaults}, **self.lake_sections}

    def lake_toml(self, path: Path, warehouse: Path, paths: list[str]) -> None:
        memory = self.cli_driver_memory or self.args.driver_memory
        from_common = {"spark.driver.memory": memory, "spark.driver.host": "127.0.0.1",
                       "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
                       "spark.sql.shuffle.partitions": str(self.args.shuffle_partitions), **self.spark_conf}
        q = json.dumps
        sections = {"source": {"kind": "files", "paths": paths}, **self.lake_sections}
        lines = [f"warehouse = {q(str(warehouse))}", 'database = "lake"']
        for name, values in sections.items():  # JSON's strings, numbers, booleans and arrays are TOML's too
            lines += ["", f"[{name}]", *[f"{key} = {q(value)}" for key, value in values.items()]]
        lines += ["", "[defaults]", f"buckets = {self.args.buckets}", f"merge_on_read = {q(self.args.merge_on_read)}",
                  *[f"{key} = {q(value)}" for key, value in self.table_defaults.items()],
                  "", "[spark]", f"master = {q(f'local[{self.args.cores}]')}", "", "[spark.conf]"]
        lines += [f"{q(k)} = {q(v)}" for k, v in from_common.items()]
        path.write_text("\n".join(lines) + "\n")

    def cli(self, run_name: str, commands: list[tuple[str, list[str], list[str]]],
            checks: dict[str, tuple[int, list[str]]] | None = None, warehouse: Path | None = None, *,
            engine: str = "lakecompact-cli", launcher: list[str] | None = None,
            write_toml: Callable[[Path, list[str]], None] | None = None, env: dict | None = None,
            before: Callable[[str, bool], None] | None = None,
            measure: Callable[[str], AbstractContextManager[dict]] | None = None,
            retry: Callable[[str, dict], str | None] | None = None, relation: str = VIEW,
            python: Path | str = VENV_PYTHON) -> dict:
        """lakecompact through its command line: each (step, argv, source paths) one process, timed whole.
        checks: name -> (after which command index, paths): a `sql` of the checksum query there (not timed).
        warehouse: an existing lake to work on (kept); default a new one under the run's work folder.
        launcher: the command line before `--config` (default the `lakecompact` script; e.g. a spark-submit);
        write_toml(path, source paths): the lake.toml (default lake_toml, a local lake); before(step, timed): called
        before each process; measure(step): a context around each process whose dict joins the step's info;
        retry(step, that dict): after a failed process, why to run it once more (None: do not);
        relation: the view the checks read; python: the environment whose lakecompact and pyspark run (the
        launcher's, when one is given)."""
        spark = spark_version(python)
        if self.reused(run_name, spark):
            return self.runs[run_name]
        work = self.work / run_name.replace("@", "-").replace("=", "")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        own_warehouse = warehouse is None and write_toml is None
        warehouse, toml = warehouse or work / "warehouse", work / "lake.toml"
        exe = Path(python).parent / "lakecompact"
        base = launcher or ([str(exe)] if exe.exists() else [str(python), "-m", "lakecompact"])
        write_toml = write_toml or (lambda path, paths: self.lake_toml(path, warehouse, paths))
        result = {"engine": engine, "run": run_name, "steps": [], "checks": {}, "error": None,
                  "info": {"command": " ".join(base), "spark_version": spark},
                  "process": {"seconds": 0.0, "peak_rss_mb": 0}}
        self.runs[run_name] = result
        logs = BENCH / "logs" / self.name

        def command(step, argv, paths, record=True):
            write_toml(toml, paths)
            slug = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
            out_path = logs / f"{run_name}.{slug}.out"
            retried = None
            while True:
                if self.args.quiet_wait and record:
                    wait_for_quiet(self.args.quiet_wait)
                if before:
                    before(step, record)
                with (measure(step) if measure else nullcontext({})) as measured:
                    process = run_process([*base, "--config", str(toml), *argv], logs / f"{run_name}.{slug}.log",
                                          env=env, timeout=self.args.timeout, stdout_path=out_path)
                why = retry(step, measured) if retry and process["rc"] and retried is None else None
                if not why:
                    break
                retried = f"run again after a failure ({process['seconds']:.0f} s, exit {process['rc']}): {why}"
                shutil.copy(process["log_path"], f"{process['log_path']}.failed")
                loud(f"{run_name}: {step} failed while {why}: running it again")
            if measured.get("service_cpu_seconds"):  # work done for it by other processes (executors, S3): its own
                process["cpu_seconds"] = round(process["cpu_seconds"] + measured["service_cpu_seconds"], 1)
                process["other_cpu_share"] = round(max(0.0, process["other_cpu_share"] - measured["service_cpu_seconds"]
                                                       / max(1e-9, process["seconds"] * (os.cpu_count() or 1))), 2)
            # spark-submit's PythonRunner passes the driver's Python stderr on to its stdout
            said = Path(process["log_path"]).read_text(errors="replace") + (
                out_path.read_text(errors="replace") if out_path.exists() else "")
            inner = re.findall(r"lakecompact \w+: finished in ([0-9.]+)s", said)
            # each table's compaction as `compact` times it: the whole process less its JVM and session start
            compactions = re.findall(r"^compact \S+: base v.* in ([0-9.]+)s$", said, re.MULTILINE)
            info = {"inner_seconds": float(inner[-1]) if inner else None, "peak_rss_mb": process["peak_rss_mb"],
                    "compaction_seconds": sum(map(float, compactions)) if compactions else None,
                    "other_cpu_share": process["other_cpu_share"],
                    "peak_hwm_sum_mb": process["peak_hwm_sum_mb"],
                    "log": process["log"], **measured, **({"retried": retried} if retried else {})}
            info["core_seconds"] = _core_seconds(info)
            if retried:
                self.notes.append(f"{run_name}: {step}: {retried}")
            if process["rc"]:
                result["error"] = f"`lakecompact {' '.join(argv)}` exited {process['rc']} (see {process['log']})"
                self.failures.append(f"{run_name}: {result['error']}")
                loud(f"{run_name} FAILED: {result['error']}")
            if record:
                result["steps"].append({"step": step, "seconds": process["seconds"], "info": info})
                result["process"]["seconds"] = round(result["process"]["seconds"] + process["seconds"], 3)
                result["process"]["peak_rss_mb"] = max(result["process"]["peak_rss_mb"], process["peak_rss_mb"])
                weighted = result["process"].get("other_weighted", 0.0) + process["other_cpu_share"] * process["seconds"]
                result["process"]["other_weighted"] = weighted
                result["process"]["other_cpu_share"] = round(weighted / max(1e-9, result["process"]["seconds"]), 2)
            log(f"{run_name}: {step}: {process['seconds']:.1f}s whole process"
                f" ({fmt(info['inner_seconds'], 1)} s inside, peak RSS {process['peak_rss_mb']} MB)")
            return out_path.read_text() if out_path.exists() else ""

        for index, (step, argv, paths) in enumerate(commands):
            if result["error"]:
                break
            command(step, argv, paths)
            for name, (after, check_paths) in (checks or {}).items():
                if after == index and not result["error"]:
                    out = command(f"check {name}", ["sql", f"SELECT {CHECK_SQL} FROM {relation}"], check_paths,
                                  record=False)
                    row = next((json.loads(line) for line in reversed(out.strip().splitlines())
                                if line.startswith('{"rows"')), {})
                    result["checks"][name] = {k: row.get(k) for k in ("rows", "score_sum", "checksum")}
        if not self.args.keep_work and own_warehouse:
            shutil.rmtree(warehouse, ignore_errors=True)
        return result

    # -- reporting ---------------------------------------------------------------------------------------
    def seconds(self, run_name: str, *steps: str) -> float | None:
        result = self.runs.get(run_name)
        if not result:
            return None
        found = {s["step"]: s["seconds"] for s in result["steps"]}
        if any(s not in found for s in steps):
            return None
        return round(sum(found[s] for s in steps), 3)

    def repeated(self, run_name: str, prefix: str) -> tuple[float | None, float | None]:
        """(best, median) of a step run `--repeat` times (`<prefix> #1`, `#2`, …; or once, as `<prefix>`)."""
        steps = self.runs.get(run_name, {}).get("steps", [])
        values = [s["seconds"] for s in steps if s["step"].startswith(prefix)]
        return (round(min(values), 3), round(sorted(values)[len(values) // 2], 3)) if values else (None, None)

    def correctness(self, reference: str | None, expected: dict | None = None) -> dict:
        """Every check of every run against the reference run's check of the same name (the part before ' ['),
        or against `expected` values."""
        rows, ok = [], True
        ref_checks = self.runs.get(reference, {}).get("checks", {}) if reference else {}
        for run_name, result in self.runs.items():
            for name, values in result.get("checks", {}).items():
                key = name.split(" [")[0]
                want = (expected or {}).get(key) or ref_checks.get(key)
                if want is None:
                    status = "no reference"
                elif all(values.get(k) == want.get(k) for k in ("rows", "score_sum", "checksum")):
                    status = "ok"
                else:
                    status = "MISMATCH"
                    ok = False
                    loud(f"MISMATCH: {run_name} check '{name}': {values} != reference {want}")
                rows.append({"run": run_name, "check": name, **values, "status": status})
        for run_name, result in self.runs.items():
            if result.get("error"):
                ok = False
        return {"reference": reference, "checks": rows, "all_agree": ok and bool(rows)}

    def write(self, title: str, summary: list[dict], correctness: dict, reference_label: str,
              extra_md: str = "") -> None:
        self.results.mkdir(parents=True, exist_ok=True)
        for row in summary:  # a number taken while other processes held the CPUs says so next to it
            other = self.runs.get(row.get("run"), {}).get("process", {}).get("other_cpu_share")
            if other is not None and other > NOISY and "NOISY" not in row.get("note", ""):
                row["note"] = (row.get("note") or "") + f"{'; ' if row.get('note') else ''}NOISY: other processes " \
                              f"used {other:.0%} of the CPUs during this run"
            why = self.runs.get(row.get("run"), {}).get("not_run")
            if why and "not run" not in (row.get("note") or ""):
                row["note"] = f"not run: {why}"
        steps = [{"run": r, "engine": res["engine"], "step": s["step"], "seconds": s["seconds"],
                  "info": s.get("info", {})} for r, res in self.runs.items() for s in res["steps"]]
        doc = {"scenario": self.scenario, "title": title, "params": self.params, "machine": self.args.machine,
               "reference": reference_label, "summary": summary, "correctness": correctness,
               "failures": self.failures, "notes": self.notes, "steps": steps,
               "spark_versions": {r: res.get("info", {}).get("spark_version") for r, res in self.runs.items()
                                  if res["engine"] not in ("duckdb", "delta-rs") and not res.get("not_run")},
               "not_run": {r: res["not_run"] for r, res in self.runs.items() if res.get("not_run")},
               "runs": {r: {k: v for k, v in res.items() if k != "steps"} for r, res in self.runs.items()}}
        json_path = self.results / f"{self.name}.json"
        json_path.write_text(json.dumps(doc, indent=1, default=str))
        md = render_markdown(doc, reference_label, extra_md)
        (self.results / f"{self.name}.md").write_text(md)
        chart = run_process([str(VENV_PYTHON), str(HERE / "chart.py"), str(json_path),
                             str(self.results / f"{self.name}.png")], BENCH / "logs" / self.name / "chart.log")
        if chart["rc"]:
            log(f"chart failed: see {chart['log']}")
        print(md)
        log(f"results: {json_path.relative_to(ROOT) if json_path.is_relative_to(ROOT) else json_path}, .md, .png")
        if self.results != RESULTS:  # the page reports benchmarks/results only
            log(f"docs/performance.md not written: these results are in {self.results}, not {RESULTS}")
            return
        try:  # the page of every target's latest ratio, so that it never lags the results
            log(f"{write_performance_page().relative_to(ROOT)} written again from benchmarks/results/")
        except Exception as exc:  # noqa: BLE001 - the results are written; the page can be made later
            loud(f"docs/performance.md not written ({exc!r}): run `python benchmarks/run.py report`")


def ratio_of(seconds, reference):
    """seconds / reference to 3 significant digits, or None."""
    return float(f"{seconds / reference:.3g}") if seconds is not None and reference else None


def fmt(value, digits=2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render_markdown(doc: dict, reference_label: str, extra_md: str) -> str:
    m, p = doc["machine"], doc["params"]
    out = [f"# {doc['title']}", ""]
    out.append(f"Machine: {m['nproc']} cores (`nproc`), {m['memory_gib']} GiB memory, {m['cpu']}; {m['date']}; "
               f"{m['java']}; lakecompact {m['lakecompact_commit']}.  ")
    out.append(spark_line(doc) + "  ")
    out.append("Parameters: " + ", ".join(f"{k} = {fmt(v) if isinstance(v, int) and not isinstance(v, bool) else str(v).lower()}" for k, v in p.items()) + ".")
    out.append("")
    out.append(f"Seconds are each engine's own step time (JVM start excluded) unless the step says whole process; "
               f"ratio = seconds / {reference_label} (above 1: slower than it).")
    out.append("")
    out.append("| step | engine | seconds | ratio | note |")
    out.append("| --- | --- | ---: | ---: | --- |")
    for row in doc["summary"]:
        ratio = row.get("ratio")
        out.append(f"| {row['step']} | {row['engine']} | {fmt(row.get('seconds'))} | "
                   f"{fmt(ratio) + '×' if ratio is not None else '—'} | {row.get('note', '')} |")
    out.append("")
    if extra_md:
        out += [extra_md, ""]
    corr = doc["correctness"]
    verdict = "all engines agree" if corr["all_agree"] else "**MISMATCH OR FAILURE: see below**"
    out.append(f"## Correctness: {verdict}")
    out.append("")
    out.append(f"Live rows, sum(score) and sum of md5(id|name|score|bio)[0:8] as an integer, per engine, "
               f"compared with `{corr['reference']}`.")
    out.append("")
    out.append("| run | check | rows | sum(score) | checksum | status |")
    out.append("| --- | --- | ---: | ---: | ---: | --- |")
    for row in corr["checks"]:
        out.append(f"| {row['run']} | {row['check']} | {fmt(row.get('rows'))} | {fmt(row.get('score_sum'))} | "
                   f"{row.get('checksum')} | {row['status'] if row['status'] == 'ok' else '**' + row['status'] + '**'} |")
    out.append("")
    if doc["failures"]:
        out.append("## Failures")
        out.append("")
        out += [f"- **{f}**" for f in doc["failures"]]
        out.append("")
    if doc.get("not_run"):
        out.append("## Not run")
        out.append("")
        out += [f"- **{name}: not run**: {why}" for name, why in doc["not_run"].items()]
        out.append("")
    out.append("## Processes")
    out.append("")
    out.append("\"CPU used by others\": the share of the machine's CPU time, during that run, used by processes outside "
               "the benchmark (the machine is shared); high values mean slower, noisier numbers for that run.")
    out.append("")
    out.append("| run | engine | whole process s | peak RSS MB (python + JVM) | CPU used by others | versions |")
    out.append("| --- | --- | ---: | ---: | ---: | --- |")
    for name, run in doc["runs"].items():
        info = run.get("info", {})
        versions = ", ".join(f"{'Spark' if k == 'spark_version' else k} {v}" for k, v in info.items()
                             if k in ("spark_version", "duckdb", "deltalake"))
        if info.get("jars"):
            versions += "; " + ", ".join(info["jars"])
        if run.get("not_run"):
            versions = f"not run: {run['not_run']}"
        proc = run.get("process", {})
        other = proc.get("other_cpu_share")
        out.append(f"| {name} | {run['engine']} | {fmt(proc.get('seconds'), 1)} | {fmt(proc.get('peak_rss_mb'))} | "
                   f"{'—' if other is None else f'{other:.0%}'} | {versions} |")
    out.append("")
    out.append("## All steps")
    out.append("")
    out.append("| run | step | seconds |")
    out.append("| --- | --- | ---: |")
    for step in doc["steps"]:
        out.append(f"| {step['run']} | {step['step']} | {fmt(step['seconds'])} |")
    if doc["notes"]:
        out += ["", "## Notes", ""] + [f"- {n}" for n in doc["notes"]]
    return "\n".join(out) + "\n"


def same_spark_note(run: Run) -> str:
    """The Spark the run's Spark engines shared, and the peers' builds on it."""
    versions = sorted({res.get("info", {}).get("spark_version") or "unknown" for res in run.runs.values()
                       if res["engine"] not in ("duckdb", "delta-rs") and not res.get("not_run")})
    jars = sorted({jar for name, res in run.runs.items() if name in PEERS
                   for jar in res.get("info", {}).get("jars", []) if "spark" in jar})  # not their dependencies
    where = f"Spark {' and '.join(versions)}" + (" (NOT one version: part of any difference is Spark's own)"
                                                 if len(versions) > 1 else "")
    return (f"lakecompact, the raw Spark reference and the peers run on {where}, "
            f"local[{run.args.cores}], with the same driver memory and spark.sql.shuffle.partitions; the peers' "
            f"builds: {', '.join(jars) or 'none ran'}.")


def spark_line(doc: dict) -> str:
    """Which Spark each Spark engine of the results ran on: every ratio between two of them carries the difference
    when they are not the same."""
    by_version: dict[str, list[str]] = {}
    for name, version in (doc.get("spark_versions") or {
            r: run.get("info", {}).get("spark_version") for r, run in doc["runs"].items()
            if run["engine"] not in ("duckdb", "delta-rs")}).items():
        by_version.setdefault(version or "unknown", []).append(name)
    if not by_version:
        return "Spark: no Spark engine ran."
    if len(by_version) == 1:
        version, names = next(iter(by_version.items()))
        return f"Spark: {version} for every Spark engine ({', '.join(names)})."
    return ("Spark: **not one version**: " + "; ".join(f"{v} ({', '.join(n)})" for v, n in by_version.items())
            + ": part of a difference between them is Spark's own.")


def summary_rows(run: Run, spec: list[tuple[str, str, str, list[str], str]], reference: dict[str, float | None]) -> list[dict]:
    """spec: (summary step, engine label, run name, its steps summed, note); ratio to reference[summary step]."""
    rows = []
    for step, label, run_name, steps, note in spec:
        if run_name not in run.runs:
            continue
        seconds = run.seconds(run_name, *steps)
        if seconds is None and run.runs[run_name].get("error"):
            note = (note + "; " if note else "") + "failed"
        ref = reference.get(step)
        ratio = ratio_of(seconds, ref)
        rows.append({"step": step, "engine": label, "seconds": seconds, "ratio": ratio, "note": note,
                     "run": run_name, "steps": steps})
    return rows


def cli_compaction_seconds(run: Run, run_name: str, step: str) -> float | None:
    """A CLI step's compaction as `compact` timed it (its JVM and session start left out)."""
    found = [s for s in run.runs.get(run_name, {}).get("steps", []) if s["step"] == step]
    return found[0]["info"].get("compaction_seconds") if found else None


def cold_compaction_rows(run: Run) -> list[dict]:
    """The change's compaction with each step in a process of its own: lakecompact's `compact v2` as a command
    of its own, each peer's MERGE in a JVM that only loaded its jars (cold_merge); ratios to lakecompact's."""
    ours = cli_compaction_seconds(run, "lakecompact-cli", "compact v2")
    rows = [{"step": "apply change, each step its own process", "engine": "lakecompact CLI (compact v2)",
             "seconds": ours, "ratio": ratio_of(ours, ours), "note": "as `compact` times it: no JVM start",
             "run": "lakecompact-cli", "steps": ["compact v2"]}] if ours else []
    for peer in PEERS:
        name = f"{peer} (own JVM) apply change"
        if name in run.runs:
            seconds = run.seconds(name, "apply change")
            rows.append({"step": "apply change, each step its own process", "engine": f"{peer} (MERGE, own JVM)",
                         "seconds": seconds, "ratio": ratio_of(seconds, ours),
                         "note": "after the session start; the table loaded by another process",
                         "run": name, "steps": ["apply change"]})
    return rows


# -- scenarios -------------------------------------------------------------------------------------------
def _engines(args, default) -> list[str]:
    chosen = [e.strip() for e in args.engines.split(",")] if args.engines else list(default)
    unknown = [e for e in chosen if e not in ALL_ENGINES]
    if unknown:
        raise SystemExit(f"unknown engine(s) {unknown}; known: {', '.join(ALL_ENGINES)}")
    return chosen


def land_snapshot(snap: dict, args, step: str = "land snapshot") -> tuple[list[dict], list[str]]:
    """lakecompact's land ops for a snapshot: one `land` of every file, as the peers load it, or one per
    --land-batch-files files, as if the files arrived that way."""
    files = sorted(str(f) for f in Path(snap["glob"]).parent.glob("*.jsonl"))
    size = args.land_batch_files or len(files)
    batches = [files[i:i + size] for i in range(0, len(files), size)]
    if len(batches) <= 1:
        return [{"op": "land", "paths": [snap["glob"]], "step": step}], [step]
    ops, names, seen = [], [], []
    for i, batch in enumerate(batches):
        seen += batch
        name = f"{step} [{i + 1}/{len(batches)}]"
        ops.append({"op": "land", "paths": list(seen), "step": name})
        names.append(name)
    return ops, names


def _peer_ops(snapshot: dict, changes: list[dict], repeat: int = 1) -> list[dict]:
    ops = [{"op": "load", "paths": [snapshot["glob"]], "step": "load snapshot"}, {"op": "check", "name": "after load"}]
    for change in changes:
        ops.append({"op": "merge", "paths": [change["glob"]], "step": "apply change"})
    ops += [{"op": "read", "step": "read after change", "repeat": repeat}, {"op": "check", "name": "after change"}]
    return ops


def scenario_merge(args) -> None:
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
    run = Run("merge", args)
    engines = _engines(args, DEFAULT_MERGE_ENGINES)
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    change = change_after(f"change-{n}-{c}", snap, c, args, 0, n, 1)
    params = {"rows": n, "change_rows": c, "buckets": args.buckets, "cores": args.cores,
              "land_batch_files": args.land_batch_files,
              "driver_memory": args.driver_memory, "shuffle_partitions": args.shuffle_partitions,
              "events_per_file": args.events_per_file}
    run.params = params
    s_glob, c_glob = snap["glob"], change["glob"]
    snap_ops, snap_steps = land_snapshot(snap, args)
    if "lakecompact" in engines:
        run.engine("lakecompact", "lakecompact", [
            *snap_ops,
            {"op": "compact", "step": "compact v1"},
            {"op": "check", "name": "after load"},
            {"op": "land", "paths": [s_glob, c_glob], "step": "land change"},
            {"op": "read", "step": "read view (pending increments)", "repeat": args.repeat},
            {"op": "check", "name": "after change [view with pending increments]"},
            {"op": "compact", "step": "compact v2"},
            {"op": "read", "step": "read view (compacted base)", "repeat": args.repeat},
            {"op": "check", "name": "after change"},
        ])
    if "lakecompact-cli" in engines:
        run.cli("lakecompact-cli", [
            *[(op["step"], ["land"], op["paths"]) for op in snap_ops],
            ("compact v1", ["compact"], [s_glob]),
            ("land change", ["land"], [s_glob, c_glob]),
            ("sql view (pending increments)", ["sql", READ_SQL], [s_glob, c_glob]),
            ("compact v2", ["compact"], [s_glob, c_glob]),
            ("sql view (compacted base)", ["sql", READ_SQL], [s_glob, c_glob]),
            ("status", ["status"], [s_glob, c_glob]),
        ], checks={"after load": (len(snap_ops), [s_glob]), "after change": (len(snap_ops) + 3, [s_glob, c_glob])})
    if "raw-spark" in engines:
        run.engine("raw-spark", "raw-spark", [
            {"op": "json-to-parquet", "paths": [s_glob], "step": "snapshot: read.json + write parquet"},
            {"op": "json-to-parquet", "paths": [c_glob], "step": "change: read.json + write parquet"},
        ])
    for peer in [e for e in engines if e in PEERS]:
        run.engine(peer, peer, _peer_ops(snap, [change], args.repeat))
        run.cold_merge(peer, snap, change, "apply change")
    for ref in [e for e in engines if e in ("duckdb", "delta-rs")]:
        run.engine(ref, ref, _peer_ops(snap, [change], args.repeat))

    # the summary: comparable steps
    reads = lambda prefix: [f"{prefix} #{i + 1}" for i in range(args.repeat)] if args.repeat > 1 else [prefix]
    lc_load = [*snap_steps, "compact v1"]
    lc_change = ["land change", "compact v2"]
    spec = [
        ("load snapshot", "lakecompact (land + compact v1)", "lakecompact", lc_load, ""),
        ("load snapshot", f"lakecompact CLI ({len(lc_load)} whole processes)", "lakecompact-cli", lc_load,
         "incl. JVM starts"),
    ]
    for peer in PEERS:
        spec.append(("load snapshot", peer, peer, ["load snapshot"], ""))
    spec += [
        ("load snapshot", "duckdb (parse + write parquet)", "duckdb", ["load snapshot"], "no Spark"),
        ("load snapshot", "delta-rs (duckdb parse + write)", "delta-rs",
         ["load snapshot: parse (duckdb)", "load snapshot: write (delta-rs)"], "no Spark"),
        ("load snapshot", "raw Spark 4 read.json + parquet write", "raw-spark", ["snapshot: read.json + write parquet"],
         "floor: no decoding, no table"),
        ("apply change", "lakecompact (land + compact v2)", "lakecompact", lc_change, ""),
        ("apply change", "lakecompact CLI (2 whole processes)", "lakecompact-cli", lc_change, "incl. JVM starts"),
    ]
    for peer in PEERS:
        spec.append(("apply change", f"{peer} (MERGE)" if "hudi" not in peer else f"{peer} (upsert)", peer,
                     ["apply change"], "parse + dedup + merge"))
    spec += [
        ("apply change", "duckdb (full rewrite)", "duckdb", ["apply change: parse change", "apply change: rewrite base"],
         "parse + latest-per-key rewrite"),
        ("apply change", "delta-rs (MERGE)", "delta-rs", ["apply change: parse (duckdb)", "apply change: merge (delta-rs)"],
         "duckdb parse + merge"),
        ("apply change", "raw Spark 4 read.json + parquet write", "raw-spark", ["change: read.json + write parquet"],
         "floor: no merge"),
        ("change readable", "lakecompact (land only: the view serves it)", "lakecompact", ["land change"],
         "view = base ∪ pending increments"),
        ("change readable", "lakecompact CLI (land only, whole process)", "lakecompact-cli", ["land change"],
         "incl. JVM start"),
    ]
    for peer in PEERS:
        spec.append(("change readable", peer, peer, ["apply change"], "its whole apply-change step"))
    spec += [
        ("change readable", "duckdb", "duckdb", ["apply change: parse change", "apply change: rewrite base"], ""),
        ("change readable", "delta-rs", "delta-rs", ["apply change: parse (duckdb)", "apply change: merge (delta-rs)"],
         ""),
        ("read after change", "lakecompact view (compacted base)", "lakecompact", reads("read view (compacted base)"), ""),
        ("read after change", "lakecompact view (pending increments)", "lakecompact",
         reads("read view (pending increments)"), "before compact v2"),
    ]
    for peer in PEERS + ("duckdb", "delta-rs"):
        spec.append(("read after change", peer, peer, reads("read after change"), ""))
    reference = {
        "load snapshot": run.seconds("lakecompact", *lc_load),
        "apply change": run.seconds("lakecompact", *lc_change),
        "change readable": run.seconds("lakecompact", "land change"),
        "read after change": run.seconds("lakecompact", *reads("read view (compacted base)")),
    }
    summary = summary_rows(run, spec, reference) + cold_compaction_rows(run)
    if args.repeat > 1:
        for row in summary:
            if row["step"] == "read after change":
                found = {s["step"]: s["seconds"] for s in run.runs[row["run"]]["steps"]}
                values = sorted(found[s] for s in row["steps"] if s in found)
                row["seconds"] = values[len(values) // 2] if len(values) == len(row["steps"]) else None
                first = found.get(row["steps"][0])
                row["note"] = ((row["note"] + "; " if row["note"] else "") +
                               f"median of {args.repeat}; first {fmt(first)} s")
        ref = next((r["seconds"] for r in summary if r["engine"] == "lakecompact view (compacted base)"), None)
        for row in summary:
            if row["step"] == "read after change":
                row["ratio"] = ratio_of(row["seconds"], ref)
    run.notes += [
        (f"Events: kcat -J lines with the Kafka Connect schema embedded in key and payload "
         f"({snap['bytes'] / max(1, snap['kafka_messages']):.0f} bytes/event); snapshot {snap['files']} files, "
         f"change {change['files']} files ({change['deletes']:,} deletes each followed by its tombstone)."),
        ("\"change readable\": the time until a reader sees the change. For lakecompact that is `land` alone (its "
         "view already serves base ∪ pending increments), for the others their whole apply-change step; ratios there "
         "are to lakecompact's land."),
        (f"lakecompact lands the snapshot in {len(snap_steps)} land run(s) of at most {args.land_batch_files} files "
         f"({args.land_batch_files * args.events_per_file:,} events) each, as if the files arrived that way; the peers "
         "load it in one go." if len(snap_steps) > 1 else
         "lakecompact lands the snapshot in one land run, as the peers load it in one go."),
        same_spark_note(run),
    ]
    correctness = run.correctness("duckdb" if "duckdb" in run.runs else next(iter(run.runs), None))
    run.write(f"merge: {n:,} rows + a change of {c:,} events", summary, correctness,
              "lakecompact (in-process) for the same step")


def scenario_change_size(args) -> None:
    n = args.rows or 1_000_000
    c = args.change_rows or max(10, n // 100)
    run = Run("change-size", args)
    engines = _engines(args, ("lakecompact", "delta", "iceberg-cow", "iceberg-mor", "hudi-cow", "duckdb"))
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    spread = change_after(f"change-{n}-{c}-spread", snap, c, args, 0, n, 11)
    cluster_hi = max(c, n // 20)
    clustered = change_after(f"change-{n}-{c}-clustered", spread, c, args, 0, cluster_hi, 12)
    params = {"rows": n, "change_rows": c, "clustered_key_range": f"[0, {cluster_hi})", "buckets": args.buckets,
              "cores": args.cores, "driver_memory": args.driver_memory}
    run.params = params
    s, a, b = snap["glob"], spread["glob"], clustered["glob"]
    snap_ops, snap_steps = land_snapshot(snap, args)
    run.engine("lakecompact", "lakecompact", [
        *snap_ops,
        {"op": "compact", "step": "compact: full (v1 from the snapshot)"},
        {"op": "land", "paths": [s, a], "step": "land 1% spread"},
        {"op": "compact", "step": "compact: 1% change spread over all keys"},
        {"op": "check", "name": "after spread"},
        {"op": "land", "paths": [s, a, b], "step": "land 1% clustered"},
        {"op": "compact", "step": "compact: 1% change clustered in 5% of the keys"},
        {"op": "check", "name": "after clustered"},
    ])
    peer_ops = [
        {"op": "load", "paths": [s], "step": "load snapshot"},
        {"op": "merge", "paths": [a], "step": "apply spread"}, {"op": "check", "name": "after spread"},
        {"op": "merge", "paths": [b], "step": "apply clustered"}, {"op": "check", "name": "after clustered"},
    ]
    for other in [e for e in engines if e in (*PEERS, "duckdb")]:
        run.engine(other, other, peer_ops)
    full = run.seconds("lakecompact", "compact: full (v1 from the snapshot)")
    buckets = {}
    for step in run.runs["lakecompact"]["steps"]:
        report = step.get("info", {}).get("report")
        if isinstance(report, list) and report and isinstance(report[0], dict):
            deltas = report[0].get("deltas_written")
            buckets[step["step"]] = (f"{report[0].get('buckets_rewritten')} of {report[0].get('bucket_count')} buckets rewritten"
                                     + (f", {deltas} with a new delta" if deltas else ""))
    spec = [
        ("compaction", "full (v1 from the snapshot)", "lakecompact", ["compact: full (v1 from the snapshot)"]),
        ("compaction", "1% spread over all keys", "lakecompact", ["compact: 1% change spread over all keys"]),
        ("compaction", "1% clustered in 5% of the keys", "lakecompact", ["compact: 1% change clustered in 5% of the keys"]),
        ("landing", f"snapshot ({len(snap_steps)} land runs)", "lakecompact", snap_steps),
        ("landing", "1% spread", "lakecompact", ["land 1% spread"]),
        ("landing", "1% clustered", "lakecompact", ["land 1% clustered"]),
    ]
    summary = []
    for group, label, run_name, steps in spec:
        seconds = run.seconds(run_name, *steps)
        summary.append({"step": group, "engine": f"lakecompact: {label}", "seconds": seconds,
                        "ratio": ratio_of(seconds, full) if group == "compaction" else None,
                        "note": buckets.get(steps[0], ""), "run": run_name, "steps": steps})
    for kind, ours in [("spread", "compact: 1% change spread over all keys"),
                       ("clustered", "compact: 1% change clustered in 5% of the keys")]:
        mine = run.seconds("lakecompact", ours)
        group = f"1% {kind}: compaction against a MERGE"
        summary.append({"step": group, "engine": "lakecompact (compact)", "seconds": mine, "ratio": ratio_of(mine, mine),
                        "note": buckets.get(ours, ""), "run": "lakecompact", "steps": [ours]})
        for peer in [e for e in PEERS if e in run.runs]:
            seconds = run.seconds(peer, f"apply {kind}")
            summary.append({"step": group, "engine": f"{peer} (MERGE)", "seconds": seconds,
                            "ratio": ratio_of(seconds, mine), "note": "parse + dedup + merge", "run": peer,
                            "steps": [f"apply {kind}"]})
    run.notes.append("Buckets are pmod(xxhash64(id), buckets): keys clustered in a range of ids still hash to every "
                     "bucket, so clustering in key space does not reduce the buckets a compaction rewrites.")
    run.write(f"change-size: compaction of {c:,} changed events vs the full compaction of {n:,} rows", summary,
              run.correctness("duckdb"), "the full compaction (v1)")


def scenario_base_scaling(args) -> None:
    n = args.rows or 250_000
    c = args.change_rows or max(10, n // 10)
    run = Run("base-scaling", args)
    engines = _engines(args, ("lakecompact", "duckdb"))
    sizes = [n, 4 * n]
    snap_steps: dict[int, list[str]] = {}
    params = {"rows": n, "rows_4x": 4 * n, "change_rows": c, "buckets": args.buckets, "cores": args.cores,
              "driver_memory": args.driver_memory}
    run.params = params
    for size in sizes:
        snap = dataset(f"snapshot-{size}", "snapshot", size, args)
        change = change_after(f"change-{size}-{c}", snap, c, args, 0, size, 1)
        snap_ops, snap_steps[size] = land_snapshot(snap, args)
        if "lakecompact" in engines:
            run.engine(f"lakecompact@N={size}", "lakecompact", [
                *snap_ops,
                {"op": "compact", "step": "compact v1"},
                {"op": "land", "paths": [snap["glob"], change["glob"]], "step": "land change"},
                {"op": "compact", "step": "compact v2"},
                {"op": "read", "step": "read view (compacted base)"},
                {"op": "check", "name": f"after change N={size}"},
            ])
        for other in [e for e in engines if e in PEERS + ("duckdb", "delta-rs")]:
            ops = _peer_ops(snap, [change])
            for op in ops:
                if op["op"] == "check":
                    op["name"] += f" N={size}"
            run.engine(f"{other}@N={size}", other, ops)
    summary = []
    steps = {"lakecompact": [("land change", ["land change"]), ("compact v2", ["compact v2"]),
                             ("land + compact v2", ["land change", "compact v2"]),
                             ("initial load (land + compact v1)", None),
                             ("read view", ["read view (compacted base)"])]}
    for engine in engines:
        if engine == "lakecompact":
            pairs = steps["lakecompact"]
        elif engine == "duckdb":
            pairs = [("apply change", ["apply change: parse change", "apply change: rewrite base"]),
                     ("load snapshot", ["load snapshot"])]
        elif engine == "delta-rs":
            pairs = [("apply change", ["apply change: parse (duckdb)", "apply change: merge (delta-rs)"]),
                     ("load snapshot", ["load snapshot: parse (duckdb)", "load snapshot: write (delta-rs)"])]
        else:
            pairs = [("apply change", ["apply change"]), ("load snapshot", ["load snapshot"])]
        for label, fixed in pairs:
            names_of = {size: fixed or [*snap_steps[size], "compact v1"] for size in sizes}
            small = run.seconds(f"{engine}@N={sizes[0]}", *names_of[sizes[0]])
            for size in sizes:
                names = names_of[size]
                seconds = run.seconds(f"{engine}@N={size}", *names)
                summary.append({"step": f"{engine}: {label}", "engine": f"{engine} N={size:,}", "seconds": seconds,
                                "ratio": ratio_of(seconds, small),
                                "note": "4× the base" if size != sizes[0] else "", "run": f"{engine}@N={size}",
                                "steps": names})
    ref = f"duckdb@N={sizes[0]}"
    correctness = run.correctness(None)
    # each base size has its own reference run
    for row in correctness["checks"]:
        size = row["check"].rsplit("N=", 1)[-1]
        want = run.runs.get(f"duckdb@N={size}", {}).get("checks", {}).get(row["check"])
        row["status"] = "no reference" if want is None else (
            "ok" if all(row.get(k) == want.get(k) for k in ("rows", "score_sum", "checksum")) else "MISMATCH")
        if row["status"] == "MISMATCH":
            loud(f"MISMATCH: {row}")
    correctness["reference"] = "duckdb@N=<same base>" if ref in run.runs else None
    correctness["all_agree"] = all(r["status"] == "ok" for r in correctness["checks"]) and not run.failures
    run.write(f"base-scaling: a change of {c:,} events on a base of {n:,} vs {4 * n:,} rows", summary,
              correctness, "the same step at base N")


REFERENCE_STEP, REFERENCE_AGAIN = "parse with a known schema + write parquet", "the same again"


def _land_twice(run: Run, engines: list[str], ops: list[dict], cli: list[tuple[str, list[str], list[str]]],
                reference: dict, **reference_spec) -> tuple[list[str], list[str]]:
    """lakecompact in-process: `ops` (its lands and what they need first), then the same again in its process into
    another lake (a warm JVM, as the long-running `run` keeps); its CLI: the commands `cli`, each a process; raw
    Spark: the `reference` op, then the same again in its process. The in-process lands' steps, first and again."""
    warm = [{**op, "database": "lake_warm", "step": f"{op['step']} again"} for op in ops]
    if "lakecompact" in engines:
        run.engine("lakecompact", "lakecompact", [
            *ops, {"op": "check", "name": "landed [view over increments]"},
            *warm, {"op": "check", "name": "landed [view over increments, landed again]",
                    "relation": "lake_warm.public_customers"}])
    if "lakecompact-cli" in engines:
        run.cli("lakecompact-cli", cli)
    if "raw-spark" in engines:
        run.engine("raw-spark", "raw-spark", [{**reference, "step": REFERENCE_STEP}, {**reference, "step": REFERENCE_AGAIN},
                                              {"op": "check", "name": "landed"}], **reference_spec)
    lands = [op["step"] for op in ops if op["op"] == "land"]
    return lands, [f"{step} again" for step in lands]


def _landing_summary(run: Run, n: int, mb: float, rows: list[tuple[str, str, list[str], str, str | None]]) -> list[dict]:
    """(label, run, steps, note, reference step of raw-spark) per row: its seconds, events/s and MB/s, ratio to the
    reference step (None: no ratio)."""
    summary = []
    for label, run_name, steps, note, reference in rows:
        if run_name not in run.runs:  # an engine left out with --engines
            continue
        seconds = run.seconds(run_name, *steps)
        rate = f"; {n / seconds:,.0f} events/s, {mb / seconds:.0f} MB/s" if seconds and reference else ""
        summary.append({"step": "land the snapshot events", "engine": label, "seconds": seconds,
                        "ratio": ratio_of(seconds, run.seconds("raw-spark", reference)) if reference else None,
                        "note": f"{note}{rate}", "run": run_name, "steps": steps})
    return summary


def _landing_rows(lands: list[str], again: list[str], cli_lands: list[str], reference: str) -> list[tuple]:
    """The summary rows every landing scenario has: the reference, lakecompact in-process and CLI, and the second
    run of each in its process; `reference` says what the reference does."""
    return [
        (f"the peers' load step: {reference}", "raw-spark", [REFERENCE_STEP], "reference", REFERENCE_STEP),
        (f"lakecompact land (in-process, {len(lands)} runs)", "lakecompact", lands,
         "decodes envelopes, writes increments", REFERENCE_STEP),
        (f"lakecompact land (CLI, {len(cli_lands)} whole processes)", "lakecompact-cli", cli_lands, "incl. JVM starts",
         REFERENCE_STEP),
        ("the peers' load step, again in its process", "raw-spark", [REFERENCE_AGAIN], "reference of the row below",
         REFERENCE_AGAIN),
        ("lakecompact land again in its process, into another lake", "lakecompact", again,
         "a warm JVM, as `run` keeps (the table made again too); ratio to the reference's second run", REFERENCE_AGAIN),
    ]


def scenario_landing(args) -> None:
    """The first land of a process (a one-shot command: the JVM compiles as it goes) and the same land again in that
    process into another lake (a warm JVM, as the long-running `run` keeps), each against the raw Spark reference
    measured the same way: first in its process, then again. `--engines lakecompact-cli,raw-spark` with
    `--driver-memory 2g` is the memory scenario: each whole process's peak memory is reported."""
    n = args.rows or 1_000_000
    engines = _engines(args, ("lakecompact", "lakecompact-cli", "raw-spark", "duckdb"))
    run = Run("landing", args)
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    run.params = {"events": n, "bytes": snap["bytes"], "files": snap["files"], "cores": args.cores,
                  "driver_memory": args.driver_memory}
    ops, _ = land_snapshot(snap, args, "land")
    lands, again = _land_twice(run, engines, ops, [(op["step"], ["land"], op["paths"]) for op in ops],
                               {"op": "events-to-parquet", "paths": [snap["glob"]]})
    if "duckdb" in engines:
        run.engine("duckdb", "duckdb", [{"op": "load", "paths": [snap["glob"]], "step": "parse + write parquet"},
                                        {"op": "check", "name": "landed"}])
    mb = snap["bytes"] / 1e6
    rows = _landing_rows(lands, again, lands, "envelope parsed with a known schema, parquet written")
    rows.insert(3, ("duckdb read_json + json_transform + parquet", "duckdb", ["parse + write parquet"], "no Spark",
                    REFERENCE_STEP))
    run.write(f"landing: {n:,} snapshot events ({mb:,.0f} MB of kcat JSON)", _landing_summary(run, n, mb, rows),
              run.correctness("duckdb"), "the peers' load step (the first in its process)")


def scenario_landing_schemaless(args) -> None:
    """`landing` for Kafka Connect JSON without the embedded schema (JsonConverter schemas.enable=false): the table's
    schema is given ahead (`lakecompact schema --avsc … --key-avsc …`, docs/schemas-and-hooks.md "Topics without a
    schema"), a step of the run timed apart from `land`; the reference parses the same payloads with a known
    schema."""
    n = args.rows or 1_000_000
    engines = _engines(args, ("lakecompact", "lakecompact-cli", "raw-spark"))
    run = Run("landing-schemaless", args)
    snap = dataset(f"snapshot-{n}-no-schema", "snapshot", n, args, format="json-no-schema")
    run.params = {"events": n, "bytes": snap["bytes"], "files": snap["files"], "cores": args.cores,
                  "driver_memory": args.driver_memory}
    run.work.mkdir(parents=True, exist_ok=True)
    avsc = {}
    for name, schema in (("value", value_schema()), ("key", key_schema())):
        avsc[name] = run.work / f"customers-{name}.avsc"
        avsc[name].write_text(json.dumps(avro_schema(schema), indent=1))
    table = VIEW.split(".", 1)[1]
    given = {"op": "schema", "avsc": str(avsc["value"]), "key_avsc": str(avsc["key"]), "table": table,
             "topic": TOPIC, "step": "schema (given ahead)"}
    ops, _ = land_snapshot(snap, args, "land")
    cli = [(given["step"], ["schema", "--avsc", given["avsc"], "--key-avsc", given["key_avsc"], "--table", table,
                            "--topic", TOPIC], [snap["glob"]]),
           *[(op["step"], ["land"], op["paths"]) for op in ops]]
    lands, again = _land_twice(run, engines, [given, *ops], cli, {"op": "events-to-parquet", "paths": [snap["glob"]]})
    if "duckdb" in engines:
        run.engine("duckdb", "duckdb", [{"op": "load", "paths": [snap["glob"]], "step": "parse + write parquet"},
                                        {"op": "check", "name": "landed"}])
    mb = snap["bytes"] / 1e6
    rows = _landing_rows(lands, again, lands, "payload parsed with a known schema, parquet written")
    rows += [("lakecompact schema --avsc (in-process, before the land)", "lakecompact", [given["step"]],
              "the table made from the .avsc; not in the ratio", None),
             ("lakecompact schema --avsc (CLI, whole process)", "lakecompact-cli", [given["step"]], "not in the ratio",
              None),
             ("duckdb read_json + json_transform + parquet", "duckdb", ["parse + write parquet"], "no Spark",
              REFERENCE_STEP)]
    run.write(f"landing-schemaless: {n:,} snapshot events without embedded schemas ({mb:,.0f} MB of kcat JSON)",
              _landing_summary(run, n, mb, rows), run.correctness("duckdb" if "duckdb" in engines else "raw-spark"),
              "the peers' load step (the first in its process)")


def scenario_landing_topics(args) -> None:
    """Many tables: the `landing` scenario's events spread over --topics topics (tables), each in files of its own as
    `kcat -t` per topic writes them, landed in one batch, against the same events of one topic; each land the
    first in its process, then again in it into another lake. Then `compact` of every table of the many-table lake,
    whole and per table."""
    n, k = args.rows or 1_000_000, args.topics
    run = Run("landing-topics", args)
    one = dataset(f"snapshot-{n}", "snapshot", n, args)
    many = dataset(f"snapshot-{n}-topics-{k}", "snapshot", n, args, topics=k)
    run.params = {"events": n, "topics": k, "bytes": many["bytes"], "files": many["files"], "cores": args.cores,
                  "driver_memory": args.driver_memory}
    views = [f"lake.public_customers_{i:03d}" for i in range(k)]
    for run_name, snap, relation in (("one-table", one, VIEW), ("tables", many, views)):
        ops = [{"op": "land", "paths": [snap["glob"]], "step": "land"},
               {"op": "check", "name": "landed", "relation": relation},
               {"op": "land", "paths": [snap["glob"]], "step": "land again", "database": "lake_warm"}]
        if run_name == "tables":
            ops += [{"op": "compact", "step": "compact every table"},
                    {"op": "check", "name": "landed [compacted]", "relation": relation}]
        run.engine(run_name, "lakecompact", ops)
    whole = run.seconds("tables", "compact every table")
    mb = many["bytes"] / 1e6
    summary = []
    for label, step, note in ((f"one table: land {n:,} events", "land", "reference"),
                              ("again in its process, into another lake", "land again", "reference of the row below")):
        reference = run.seconds("one-table", step)
        summary += [
            {"step": "land", "engine": label, "seconds": reference, "ratio": 1.0 if reference else None,
             "note": note, "run": "one-table", "steps": [step]},
            {"step": "land", "engine": f"{k} tables: the same events, {k} topics", "seconds": run.seconds("tables", step),
             "ratio": ratio_of(run.seconds("tables", step), reference), "note": f"{many['files']} files", "run": "tables",
             "steps": [step]},
        ]
    summary.append({"step": "compact", "engine": f"compact of the {k} tables (one command)", "seconds": whole,
                    "ratio": None, "note": f"{whole / k:.2f} s per table" if whole else "", "run": "tables",
                    "steps": ["compact every table"]})
    run.write(f"landing-topics: {n:,} snapshot events over {k} topics ({mb:,.0f} MB of kcat JSON)", summary,
              run.correctness("one-table"), "one table's land of the same events (the first in its process)")


@contextmanager
def kafka_with_registry(topic: str) -> Iterator[tuple[object, dict]]:
    """The stack's Kafka (started when it is not running, and then stopped at the end) and the tests' schema registry
    with the events' schemas for `topic` (benchmarks/engines/registry.py, ended at the end): (stack, registry)."""
    stack = _stack_module()
    started = stack._kafka_pid() is None
    if started:
        log(f"starting the stack's Kafka ({stack.KAFKA_BOOTSTRAP})")
        stack.up(components=["kafka"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([str(VENV_PYTHON), str(ENGINES_DIR / "registry.py"), topic], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=env)
    try:
        registry = json.loads(server.stdout.readline() or "{}")
        if not registry:
            raise SystemExit("the schema registry did not start (benchmarks/engines/registry.py)")
        yield stack, registry
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        if started:
            log("stopping the stack's Kafka this run started")
            stack.down(components=["kafka"])


def scenario_landing_avro(args) -> None:
    """`landing` for Avro in Confluent's wire format, from a Kafka topic, the writer schema in a schema registry
    (the tests' server, started here): lakecompact with `kind = "kafka"` and `[registry]`; the reference reads the
    same topic with Spark's Kafka source and decodes it with from_avro and the schema known in advance. Producing the
    topic (benchmarks/generate.py --format avro) is setup, not timed; a topic that holds the events is kept."""
    n = args.rows or 1_000_000
    engines = _engines(args, ("lakecompact", "lakecompact-cli", "raw-spark"))
    run = Run("landing-avro", args)
    topic = f"bench{n}{_generator_hash()}.public.customers"  # a table public_customers, as the other scenarios'
    with kafka_with_registry(topic) as (stack, registry):
        jars = [*stack.spark_kafka_jars(), *stack.spark_avro_jars()]
        data = dataset(f"avro-{n}", "snapshot", n, args, fresh=True, format="avro", kafka=stack.KAFKA_BOOTSTRAP,
                       topic=topic, value_schema_id=registry["value"], key_schema_id=registry["key"],
                       jars=",".join(jars))
        run.params = {"events": n, "bytes": data["bytes"], "topic_partitions": data["args"]["partitions"],
                      "cores": args.cores, "driver_memory": args.driver_memory}
        run.lake_sections = {"source": {"kind": "kafka", "bootstrap_servers": stack.KAFKA_BOOTSTRAP,
                                        "topics": [topic], "starting_offsets": "earliest"},
                             "registry": {"url": registry["url"]}}
        lands, again = _land_twice(
            run, engines, [{"op": "land", "step": "land"}], [("land", ["land"], [])],
            {"op": "avro-to-parquet", "kafka": stack.KAFKA_BOOTSTRAP, "topic": topic,
             "avro_schema": json.dumps(avro_schema(value_schema()))}, spark_jars=jars)
    mb = data["bytes"] / 1e6
    rows = _landing_rows(lands, again, ["land"], "Kafka source, 5-byte header cut, from_avro with a known schema, "
                                                 "parquet written")
    run.write(f"landing-avro: {n:,} snapshot events as Avro in Confluent's wire format from Kafka ({mb:,.0f} MB of "
              "values)", _landing_summary(run, n, mb, rows), run.correctness("raw-spark"),
              "the peers' load step (the first in its process)")


def scenario_view_read(args) -> None:
    n = args.rows or 1_000_000
    c = args.change_rows or 100_000
    batches = args.batches
    run = Run("view-read", args)
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    changes, previous = [], snap
    for i in range(batches):
        previous = change_after(f"change-{n}-{c}-hour-{i + 1}of{batches}", previous, max(1, c // batches), args, 0, n,
                                100 + i)
        changes.append(previous)
    params = {"rows": n, "change_rows": c, "batches": batches, "repeat": args.repeat, "buckets": args.buckets,
              "cores": args.cores, "driver_memory": args.driver_memory}
    run.params = params
    globs = [snap["glob"]]
    ops = [*land_snapshot(snap, args)[0], {"op": "compact", "step": "compact v1"},
           {"op": "read", "step": "warm-up read (not compared)", "repeat": 2},
           {"op": "read", "step": "read view (base only, nothing pending)", "repeat": args.repeat}]
    for i, change in enumerate(changes):
        globs.append(change["glob"])
        ops.append({"op": "land", "paths": list(globs), "step": f"land batch {i + 1}"})
    ops += [
        {"op": "read", "step": "read view (pending increments)", "repeat": args.repeat},
        {"op": "read", "step": "read base table only (stale)", "relation": f"{VIEW}_base",
         "where": "WHERE NOT __deleted AND __op <> 't'", "repeat": args.repeat},
        {"op": "check", "name": "after change [view with pending increments]"},
        {"op": "compact", "step": "compact v2"},
        {"op": "read", "step": "read view (compacted base)", "repeat": args.repeat},
        {"op": "check", "name": "after change"},
    ]
    engines = _engines(args, ("lakecompact", "duckdb", *VIEW_READ_PEERS))
    if "lakecompact" in engines:
        run.engine("lakecompact", "lakecompact", ops)
    hour = [{"op": "merge", "paths": [ch["glob"]], "step": f"apply batch {i + 1}"} for i, ch in enumerate(changes)]
    load = {"op": "load", "paths": [snap["glob"]], "step": "load snapshot"}
    for peer in [e for e in engines if e in PEERS]:
        # a merge-on-read peer reads its deletes beside its data until it is compacted: the same hour of changes,
        # then the same read before and after them
        run.engine(peer, peer, [load, {"op": "read", "step": "warm-up read (not compared)", "repeat": 2},
                                {"op": "read", "step": "read before the change", "repeat": args.repeat}, *hour,
                                {"op": "read", "step": "read after the change", "repeat": args.repeat},
                                {"op": "check", "name": "after change"}])
    run.engine("duckdb", "duckdb", [load, *hour, {"op": "check", "name": "after change"}])

    def best(prefix, run_name="lakecompact"):
        return run.repeated(run_name, prefix)

    _, base_med = best("read view (compacted base)")
    summary = []
    for label, prefix, note in [
        ("view, base only (after compaction)", "read view (compacted base)", "reference"),
        (f"view with {batches} pending batches ({c:,} events)", "read view (pending increments)", ""),
        ("view, base only (before the change)", "read view (base only, nothing pending)", ""),
        ("the _base table alone (stale: misses the change)", "read base table only (stale)", ""),
    ]:
        low, median = best(prefix)
        summary.append({"step": "SELECT count(*), sum(score)", "engine": label, "seconds": median,
                        "ratio": ratio_of(median, base_med),
                        "note": f"median of {args.repeat}, best {fmt(low)} s; {note}".rstrip("; "), "run": "lakecompact",
                        "steps": [prefix]})
    for peer in [e for e in engines if e in PEERS]:
        _, before = best("read before the change", peer)
        for label, prefix in [("before the change", "read before the change"),
                              (f"after the same {batches} MERGEs", "read after the change")]:
            low, median = best(prefix, peer)
            own = f"; {ratio_of(median, before)}× its read before the change" if label.startswith("after") else ""
            summary.append({"step": "SELECT count(*), sum(score)", "engine": f"{peer}: {label}", "seconds": median,
                            "ratio": ratio_of(median, base_med),
                            "note": f"median of {args.repeat}, best {fmt(low)} s{own}", "run": peer, "steps": [prefix]})
    landed, read = run.seconds("lakecompact", f"land batch {batches}"), best("read view (pending increments)")[1]
    readable = landed + read if landed and read else None
    summary.append({"step": "the hour's last batch until a reader sees it", "engine": "lakecompact: land + read of the view",
                    "seconds": readable, "ratio": ratio_of(readable, readable), "note": "the read: median",
                    "run": "lakecompact", "steps": [f"land batch {batches}"]})
    for peer in [e for e in engines if e in PEERS]:
        merged, read = run.seconds(peer, f"apply batch {batches}"), best("read after the change", peer)[1]
        seconds = merged + read if merged and read else None
        summary.append({"step": "the hour's last batch until a reader sees it", "engine": f"{peer}: MERGE + read",
                        "seconds": seconds, "ratio": ratio_of(seconds, readable), "note": "the read: median",
                        "run": peer, "steps": [f"apply batch {batches}"]})
    land_steps = [f"land batch {i + 1}" for i in range(batches)]
    summary.append({"step": "landing the hour", "engine": f"lakecompact: {batches} land runs", "seconds":
                    run.seconds("lakecompact", *land_steps), "ratio": None, "note": "sum", "run": "lakecompact",
                    "steps": land_steps})
    summary.append({"step": "compacting the hour", "engine": "lakecompact: compact v2", "seconds":
                    run.seconds("lakecompact", "compact v2"), "ratio": None, "note": "", "run": "lakecompact",
                    "steps": ["compact v2"]})
    run.write(f"view-read: an hour of pending increments ({batches} batches, {c:,} events) over {n:,} rows",
              summary, run.correctness("duckdb"), "the view over the compacted base")


HISTORY_OFF, HISTORY_ON = "lakecompact@history=off", "lakecompact@history=on"


def scenario_history(args) -> None:
    """Row history's cost (#71): the merge workload (the `merge` scenario's files) by lakecompact in-process with
    `row_history` off and on, each step timed alike; then, in the run with history, a read of the view against the
    same read as of a moment between the snapshot and the change (`sql --as-of`'s rewrite onto `<t>_history`),
    with the change pending and compacted, each `--repeat` times. Ratios: history on / off, as-of / view."""
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
    run = Run("history", args)
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    change = change_after(f"change-{n}-{c}", snap, c, args, 0, n, 1)
    # the snapshot's source time is TS0, the change's from TS0 + 1 h (one event per ms): a moment between them, and
    # one after the change
    moment = lambda ms: datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    between, after = moment(TS0 + 1_800_000), moment(TS0 + 7_200_000 + 1000 * -(-c // 1000))
    run.params = {"rows": n, "change_rows": c, "buckets": args.buckets, "cores": args.cores,
                  "land_batch_files": args.land_batch_files, "driver_memory": args.driver_memory,
                  "shuffle_partitions": args.shuffle_partitions, "events_per_file": args.events_per_file,
                  "repeat": args.repeat, "as_of": between, "as_of_after_change": after}
    snap_ops, snap_steps = land_snapshot(snap, args)
    s_glob, c_glob = snap["glob"], change["glob"]

    def reads(when: str, history: bool) -> list[dict]:
        ops = [{"op": "read", "step": f"read view ({when})", "repeat": args.repeat}]
        if history:
            ops += [{"op": "read", "step": f"read as of between snapshot and change ({when})", "as_of": between,
                     "repeat": args.repeat},
                    {"op": "read", "step": f"read as of after the change ({when})", "as_of": after,
                     "repeat": args.repeat}]
        return ops

    def as_of_checks(when: str, history: bool) -> list[dict]:
        return [{"op": "check", "name": f"after load [as of {between}, {when}]", "as_of": between},
                {"op": "check", "name": f"after change [as of {after}, {when}]", "as_of": after}] if history else []

    for run_name, history in ((HISTORY_OFF, False), (HISTORY_ON, True)):
        run.table_defaults = {"row_history": history}
        run.engine(run_name, "lakecompact", [
            *snap_ops,
            {"op": "compact", "step": "compact v1"},
            {"op": "check", "name": "after load"},
            {"op": "land", "paths": [s_glob, c_glob], "step": "land change"},
            *reads("pending increments", history),
            {"op": "check", "name": "after change [view with pending increments]"},
            *as_of_checks("change pending", history),
            {"op": "compact", "step": "compact v2"},
            *reads("compacted base", history),
            {"op": "check", "name": "after change"},
            *as_of_checks("compacted", history),
        ])
    run.table_defaults = {}

    workload = [*snap_steps, "compact v1", "land change", "compact v2"]
    spec = []
    for group, steps in [(f"compact v2: the change's compaction ({c:,} events into {n:,} rows)", ["compact v2"]),
                         (f"compact v1: the snapshot's compaction ({n:,} rows)", ["compact v1"]),
                         (f"land the snapshot ({len(snap_steps)} land run(s))", snap_steps),
                         ("land the change", ["land change"]),
                         ("the merge workload (land + compact v1, land change + compact v2)", workload)]:
        spec += [(group, "lakecompact, history off", HISTORY_OFF, steps, "reference"),
                 (group, "lakecompact, history on", HISTORY_ON, steps, "row_history = true")]
    summary = summary_rows(run, spec, {group: run.seconds(HISTORY_OFF, *steps) for group, _, _, steps, _ in spec})

    def cpu(run_name: str, steps: list[str]) -> float | None:
        found = {s["step"]: s.get("info", {}).get("cpu_seconds") for s in run.runs.get(run_name, {}).get("steps", [])}
        values = [found.get(step) for step in steps]
        return round(sum(values), 1) if None not in values else None

    for row in summary:  # the CPU the steps used: what the machine's other processes change less than wall time
        mine, off = cpu(row["run"], row["steps"]), cpu(HISTORY_OFF, row["steps"])
        if mine is not None:
            row["note"] += f"; CPU {mine:.1f} s" + (f" ({fmt(ratio_of(mine, off))}×)" if row["run"] == HISTORY_ON else "")
    for when, what in (("compacted base", "compacted"), ("pending increments", f"the change ({c:,} events) pending")):
        group = f"SELECT count(*), sum(score) at {n:,} rows, {what}"
        _, view = run.repeated(HISTORY_ON, f"read view ({when})")
        for label, run_name, prefix, note in [
            ("the view (history on)", HISTORY_ON, f"read view ({when})", "reference"),
            (f"as of {between} (between the snapshot and the change)", HISTORY_ON,
             f"read as of between snapshot and change ({when})", "sql --as-of: <t>_history"),
            (f"as of {after} (after the change: the view's rows)", HISTORY_ON,
             f"read as of after the change ({when})", "sql --as-of: <t>_history"),
            ("the view (history off)", HISTORY_OFF, f"read view ({when})", "the other run"),
        ]:
            low, median = run.repeated(run_name, prefix)
            summary.append({"step": group, "engine": label, "seconds": median, "ratio": ratio_of(median, view),
                            "note": f"median of {args.repeat}, best {fmt(low)} s; {note}", "run": run_name,
                            "steps": [prefix]})
    run.notes += [
        (f"Both runs are lakecompact in-process on the `merge` scenario's files ({n:,} snapshot rows, a change of "
         f"{c:,} events), each its own process, the same steps timed the same way; \"history on\" has "
         "`row_history = true` in [defaults]: its compactions also write the events they fold in (`<t>_events`; "
         "the first starts the history from the snapshot's rows). Ratios of the steps: history on / off."),
        (f"The as-of reads: `SELECT count(*), sum(score)` over the view rewritten as `lakecompact sql --as-of` "
         f"rewrites it (lakecompact.views.as_of, once before the timed reads) onto `<t>_history`: as of {between} "
         f"(UTC; the snapshot's source time is 30 minutes before, the change's from 30 minutes after) and as of "
         f"{after} (after the change, the view's rows). Ratios: to the view's read in the same process and state."),
        ("CPU: the CPU seconds of the process and its children (the JVM and its Python workers) over the step, read "
         "from /proc; a child that ended during the step is not counted. Other processes on the machine change it "
         "less than the step's wall time."),
        ("lakecompact lands the snapshot in one land run." if len(snap_steps) == 1 else
         f"lakecompact lands the snapshot in {len(snap_steps)} land runs of at most {args.land_batch_files} files."),
    ]
    run.write(f"history: row history on against off, {n:,} rows + a change of {c:,} events, and an as-of read",
              summary, run.correctness(HISTORY_OFF), "lakecompact with row history off for the same step; a read: "
              "the view's read in the run with history")


def scenario_small_command(args) -> None:
    n = args.rows or 250_000
    tiny = args.change_rows or 10
    run = Run("small-command", args)
    run.cli_driver_memory = args.cli_driver_memory
    target = 15.0
    params = {"rows": n, "rows_4x": 4 * n, "tiny_change_events": tiny, "buckets": args.buckets, "cores": args.cores,
              "cli_driver_memory": args.cli_driver_memory, "build_driver_memory": args.driver_memory}
    run.params = params
    summary = []
    for size in (n, 4 * n):
        snap = dataset(f"snapshot-{size}", "snapshot", size, args)
        change = change_after(f"change-{size}-{tiny}", snap, tiny, args, 0, size, 7)
        warehouse = run.work / f"lake-{size}" / "warehouse"
        shutil.rmtree(warehouse.parent, ignore_errors=True)
        lake = run.lake_settings(warehouse)
        run.engine(f"build base N={size}", "lakecompact", [
            *land_snapshot(snap, args)[0], {"op": "compact", "step": "compact v1"},
        ], lake=lake)
        cli_name = f"lakecompact-cli@N={size}"
        paths = [snap["glob"], change["glob"]]
        run.cli(cli_name, [
            ("land", ["land"], paths), ("compact", ["compact"], paths),
            ("sql", ["sql", READ_SQL], paths), ("status", ["status"], paths),
        ], checks={"after change": (1, paths)}, warehouse=warehouse)
        for step in run.runs[cli_name]["steps"]:
            info = step["info"]
            ok = step["seconds"] < target
            summary.append({"step": f"lakecompact {step['step']} (whole process)", "engine": f"N={size:,}",
                            "seconds": step["seconds"],
                            "ratio": round(step["seconds"] / target, 2),
                            "note": f"{'OK' if ok else 'OVER'} (target < {target:.0f} s); inside {info['inner_seconds']} s; "
                                    f"peak RSS {info['peak_rss_mb']} MB (python + JVM)", "run": cli_name, "steps": [step["step"]]})
        if not args.keep_work:
            shutil.rmtree(warehouse.parent, ignore_errors=True)
        run.engine(f"duckdb@N={size}", "duckdb", [
            {"op": "load", "paths": [snap["glob"]], "step": "load snapshot"},
            {"op": "merge", "paths": [change["glob"]], "step": "apply change"},
            {"op": "check", "name": f"after change N={size}"}])
    correctness = run.correctness(None)
    for row in correctness["checks"]:
        if row["run"].startswith("lakecompact-cli@N="):
            size = row["run"].split("=")[1]
            want = run.runs.get(f"duckdb@N={size}", {}).get("checks", {}).get(f"after change N={size}")
            row["status"] = "no reference" if want is None else (
                "ok" if all(row.get(k) == want.get(k) for k in ("rows", "score_sum", "checksum")) else "MISMATCH")
    correctness["checks"] = [r for r in correctness["checks"] if r["run"].startswith("lakecompact")]
    correctness["reference"] = "duckdb@N=<same base>"
    correctness["all_agree"] = all(r["status"] == "ok" for r in correctness["checks"]) and not run.failures
    run.notes.append(f"Each command is one `lakecompact --config lake.toml ...` process on a lake whose base of N rows "
                     f"was built beforehand (not timed here); {tiny} new events are landed. Peak RSS is the sampled "
                     f"sum over the process tree (the Python driver and its JVM, which holds Spark's driver and executors "
                     f"in local mode), with spark.driver.memory = {args.cli_driver_memory} (the JVM grows its heap lazily up to that "
                     f"cap, so RSS follows the cap more than the need; the base was built with {args.driver_memory}).")
    run.write(f"small-command: {tiny} events on a base of {n:,} vs {4 * n:,} rows", summary, correctness,
              f"the {target:.0f} s target")


@contextmanager
def postgres_database(name: str) -> Iterator[tuple[object, dict[str, str]]]:
    """The stack's PostgreSQL (started when it is not running, and then stopped at the end) with a database `name`
    made for the run and dropped after it: (stack, the JDBC options of its table public.customers)."""
    stack = _stack_module()
    started = stack._pg_pid() is None
    if started:
        log("starting the stack's PostgreSQL")
        stack.up(components=["postgres"])
    stack.pg_sql(f"DROP DATABASE IF EXISTS {name}")
    stack.pg_sql(f"CREATE DATABASE {name}")
    s = stack.POSTGRES
    try:
        yield stack, {"url": f"jdbc:postgresql://{s.host}:{s.port}/{name}", "dbtable": "public.customers",
                      "user": s.user, "password": s.password, "driver": "org.postgresql.Driver"}
    finally:
        stack.pg_sql(f"DROP DATABASE IF EXISTS {name}")
        if started:
            log("stopping the stack's PostgreSQL this run started")
            stack.down(components=["postgres"])


def scenario_verify(args) -> None:
    """`lakecompact verify` of a lake of N rows against the same rows in PostgreSQL (the stack's), as one command,
    against a count(*) of the table over JDBC: pushed down (the database counts), and every row read by Spark's
    JDBC source. The lake (the snapshot landed and compacted) and the table (its rows written over JDBC) are setup,
    not timed."""
    n = args.rows or 1_000_000
    run = Run("verify", args)
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    run.params = {"rows": n, "cores": args.cores, "driver_memory": args.driver_memory}
    with postgres_database(f"bench_verify_{n}") as (stack, jdbc):
        jars = stack.jdbc_jars()
        run.engine("source", "raw-spark", [
            {"op": "events-to-jdbc", "paths": [snap["glob"]], "jdbc": jdbc, "step": "write the source table"},
            {"op": "jdbc-count", "jdbc": jdbc, "pushed": True, "step": "count(*) in the database"},
            {"op": "jdbc-count", "jdbc": jdbc, "pushed": False, "step": "count of every row read"}], spark_jars=jars)
        warehouse = run.work / "lake" / "warehouse"
        shutil.rmtree(warehouse.parent, ignore_errors=True)
        run.engine("build lake", "lakecompact", [*land_snapshot(snap, args)[0], {"op": "compact", "step": "compact"}],
                   work=warehouse.parent, lake=run.lake_settings(warehouse))
        run.lake_sections = {"verify": {"jdbc_url": jdbc["url"], "user": jdbc["user"], "password": jdbc["password"],
                                        "settle_seconds": 0}}
        run.spark_conf = {"spark.jars": ",".join(jars)}
        run.cli("lakecompact-cli", [("verify", ["verify"], [snap["glob"]])], warehouse=warehouse)
        if not args.keep_work:
            shutil.rmtree(warehouse.parent, ignore_errors=True)
    verify_step = run.runs["lakecompact-cli"]["steps"][0]
    counts = {s["step"]: s for s in run.runs["source"]["steps"]}
    summary = [{"step": "verify", "engine": "lakecompact verify (whole process)", "seconds": verify_step["seconds"],
                "ratio": ratio_of(verify_step["seconds"], counts["count(*) in the database"]["seconds"]),
                "note": f"inside {verify_step['info'].get('inner_seconds')} s; ratio to the pushed-down count(*); to "
                        f"every row read: {ratio_of(verify_step['seconds'], counts['count of every row read']['seconds'])}×",
                "run": "lakecompact-cli", "steps": ["verify"]}]
    for step in ("count(*) in the database", "count of every row read"):
        summary.append({"step": "verify", "engine": f"{step} over JDBC (Spark)", "seconds": counts[step]["seconds"],
                        "ratio": ratio_of(counts[step]["seconds"], counts["count(*) in the database"]["seconds"]),
                        "note": f"{counts[step]['info'].get('rows')} rows", "run": "source", "steps": [step]})
    equal = run.runs["lakecompact-cli"]["error"] is None  # verify exits 1 when the lake differs
    correctness = {"checks": [], "reference": "verify's verdict", "all_agree": equal and not run.failures}
    run.notes.append(f"verify found the lake {'equal to' if equal else 'NOT equal to'} the table, as it must be. The lake "
                     f"holds the {n:,} snapshot rows landed and compacted; the table the same rows written over JDBC. "
                     "verify reads the table in 4 key ranges side by side and brings per-bucket counts and checksums "
                     "to the driver.")
    run.write(f"verify: a lake of {n:,} rows against PostgreSQL", summary, correctness,
              "a count(*) of the table over JDBC")


# -- the cluster scenario: lakecompact local vs spark-submit on the stack's cluster, warehouse on the stack's S3 ----
CLUSTER_RUN, LOCAL_RUN, LOCAL_S3_RUN = "lakecompact-cluster-s3", "lakecompact-local", "lakecompact-local-s3"
STACK_PARTS = ("postgres", "metastore", "s3", "cluster")  # what stack.up(["metastore", "s3", "cluster"]) starts


def _stack_module():
    """scripts/stack/stack.py (stdlib + requests; importing it starts nothing)."""
    folder = str(ROOT / "scripts" / "stack")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import stack

    return stack


class ServiceCpu:
    """The CPU time, while a step runs, of the processes that work for it outside its own process tree: the
    executors the stack's workers start (their children, sampled every 0.5 s as they come and go) and the long-lived
    services (S3, the metastore: their CPU time's growth). Counted as the step's own, not as other processes' noise."""

    def __init__(self, workers: list[int], services: list[int]):
        import threading

        self.workers, self.services = workers, services
        self.start = {pid: _cpu_ticks(pid) for pid in services}
        self.executors: dict[int, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.is_set():
            tree = _children()
            todo = [child for worker in self.workers for child in tree.get(worker, [])]
            while todo:
                pid = todo.pop()
                self.executors[pid] = max(self.executors.get(pid, 0), _cpu_ticks(pid))
                todo.extend(tree.get(pid, []))
            self.done.wait(0.5)

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        ticks = sum(self.executors.values()) + sum(max(0, _cpu_ticks(pid) - t) for pid, t in self.start.items())
        return round(ticks / os.sysconf("SC_CLK_TCK"), 1)


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
        self.stack = _stack_module()
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
        pid = stack._metastore_pid()
        if pid and "hadoop-aws" in stack._cmdline(pid):
            return
        conf_dir = BENCH / "stack" / "metastore-conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / "core-site.xml").write_text(
            "<?xml version=\"1.0\"?>\n<configuration>\n" + "".join(
                f"  <property><name>{key.removeprefix('spark.hadoop.')}</name><value>{value}</value></property>\n"
                for key, value in stack.s3_spark_conf().items()) + "</configuration>\n")
        hadoop = sorted(str(p) for p in (stack.spark_home() / "jars").glob("hadoop-client-*.jar"))
        stock = stack._metastore_classpath

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
        stack._metastore_classpath = with_s3a
        try:
            stack.start_metastore()
        finally:
            stack._metastore_classpath = stock
        self.restarted_metastore = True

    def _cluster_free(self, step: str) -> None:
        """Wait (up to --quiet-wait) until no other application holds the cluster's cores, then for both workers."""
        stack, deadline = self.stack, time.monotonic() + max(self.args.quiet_wait, 5)
        while True:
            try:
                apps = [a.get("name") for a in stack._cluster_state().get("activeapps", [])]
            except Exception:  # noqa: BLE001
                apps = []
            if not apps:
                break
            if time.monotonic() > deadline:
                self.notes.append(f"{step}: started while other applications held the cluster: {apps}")
                break
            log(f"the cluster runs other applications ({apps}): waiting")
            time.sleep(5)
        if not stack._cluster_ready():
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
            stack._pg_stop()

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


def _core_seconds(info: dict) -> float | None:
    """The time lakecompact gives for the work itself, without its session's start and its own bookkeeping: the sum
    of its `land: batch …, in N s` or `compact <table>: …, in N s` lines (from the step's log and output)."""
    log_path = ROOT / info["log"] if info.get("log") else None
    if not log_path or not log_path.exists():
        return None
    said = log_path.read_text(errors="replace") + (
        log_path.with_suffix(".out").read_text(errors="replace") if log_path.with_suffix(".out").exists() else "")
    found = re.findall(r"^(?:land: batch \d+|compact \w+): .*, in ([0-9.]+)s$", said, re.MULTILINE)
    return round(sum(float(x) for x in found), 1) if found else None


def _s3_note(s3: dict | None) -> str:
    if not s3:
        return ""
    ops = ", ".join(f"{op} {count:,}" for op, count in s3["ops"].items())
    copies = len(s3["copies_data"]) + len(s3["copies_other"])
    return (f"S3: {s3['requests']:,} requests ({ops}); COPY {copies} ({len(s3['copies_data'])} of .parquet); "
            f"{s3['put_mb']:,} MB put")


def scenario_cluster(args) -> None:
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
    run = Run("cluster", args)
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
                step.setdefault("info", {})["core_seconds"] = _core_seconds(step.get("info", {}))

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
    extra = _s3_tables(run, steps, whole)
    run.write(f"cluster: lakecompact on the stack's Spark cluster with the warehouse on S3 vs local[{args.cores}], "
              f"{n:,} rows + a change of {c:,} events", summary, run.correctness("duckdb"),
              "the same step on local[2] with a local warehouse", extra)


def _s3_tables(run: Run, steps: list[str], whole: dict) -> str:
    """Markdown: the S3 requests per step and operation, and the copies, of each run on S3."""
    out = []
    for run_name, title in ((CLUSTER_RUN, "the cluster run (spark-submit)"), (LOCAL_S3_RUN, "lakecompact on local[2]")):
        infos = {s["step"]: (s.get("info", {}).get("s3") or {}) for s in run.runs.get(run_name, {}).get("steps", [])}
        if not any(infos.values()):
            continue
        total = whole if run_name == CLUSTER_RUN else {}
        ops = sorted({op for info in infos.values() for op in info.get("ops", {})} | set(total.get("ops", {})))
        out += [f"## S3 requests of {title}", "",
                ("Per step (one process each) and S3 operation; \"COPY .parquet\" counts the copies of data files. "
                 "\"foreign\": requests of other clients of the bucket meanwhile (not counted; the bucket-level "
                 "requests, which name no key, could include some of theirs)."), "",
                "| step | requests | " + " | ".join(ops) + " | COPY .parquet | COPY other | MB put | foreign |",
                "| --- | ---: | " + " | ".join("---:" for _ in ops) + " | ---: | ---: | ---: | ---: |"]
        rows = [(step, infos.get(step, {})) for step in steps] + [("all of the run (checks included)", total)]
        for step, info in rows:
            if not info:
                continue
            out.append(f"| {step} | {info['requests']:,} | " + " | ".join(f"{info['ops'].get(op, 0):,}" for op in ops)
                       + f" | {len(info['copies_data'])} | {len(info['copies_other'])} | {info['put_mb']:,} | "
                         f"{info['foreign']:,} |")
        copied = [(step, c) for step, info in rows[:-1] for c in info.get("copies_data", []) + info.get("copies_other", [])]
        if copied:
            out += ["", "Copies (at most 30):", ""] + [f"- {step}: `{c}`" for step, c in copied[:30]]
        out.append("")
    return "\n".join(out).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", nargs="?", default="merge", choices=(*SCENARIOS, "report"),
                        help="a scenario to run, or `report`: write docs/performance.md from the results, nothing run")
    parser.add_argument("--rows", type=int, help="snapshot rows N (default: per scenario)")
    parser.add_argument("--change-rows", type=int, help="change events C (default: per scenario)")
    parser.add_argument("--engines", help=f"comma-separated, of: {', '.join(ALL_ENGINES)} (merge, change-size, base-scaling, view-read, landing, landing-schemaless, landing-avro)")
    parser.add_argument("--buckets", type=int, help="lakecompact buckets (default: N/125k, 8 to 64)")
    parser.add_argument("--cores", type=int, default=2, help="local[cores] for Spark, threads for DuckDB")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--cli-driver-memory", default="1g",
                        help="small-command: spark.driver.memory of the timed CLI commands (Spark's default 1g)")
    parser.add_argument("--executor-memory", default="2g",
                        help="cluster: spark.executor.memory on the stack's workers (2g each: all a worker has)")
    parser.add_argument("--local-s3", action="store_true",
                        help="cluster: also lakecompact on local[cores] with the warehouse on the stack's S3 (S3's "
                             "share of the difference, apart from the cluster's)")
    parser.add_argument("--shuffle-partitions", type=int, default=16)
    parser.add_argument("--topics", type=int, default=100, help="landing-topics: topics (tables) the events spread over")
    parser.add_argument("--events-per-file", type=int, default=25_000, help="events per kcat file")
    parser.add_argument("--land-batch-files", type=int, default=0,
                        help="lakecompact lands a snapshot this many files (x --events-per-file events) per land run; "
                             "0 (the default): all in one run, as the peers load it")
    parser.add_argument("--batches", type=int, default=12, help="view-read: land batches in the hour")
    parser.add_argument("--repeat", type=int, default=3, help="times each timed read runs")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per engine process")
    parser.add_argument("--keep-work", action="store_true", help="keep the engines' tables under .bench/work")
    parser.add_argument("--quiet-wait", type=float, default=300,
                        help="before each engine, wait up to this many seconds for other processes to leave the CPUs "
                             "(0: do not wait)")
    parser.add_argument("--reuse", default="",
                        help="comma-separated run names to take from the scenario's last results file instead of "
                             "running them again (only when its parameters are the same)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: write the scenario's .md/.png (and .json) again from its last results, with "
                             "the same parameters given")
    parser.add_argument("--name", help="results files benchmarks/results/<name>.{json,md,png} (default: the scenario), "
                        "e.g. merge-5m for a run at another size that should not replace the default run's results")
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where the results files go (and --reuse / --report-only read them); docs/performance.md "
                             "is written again only from the default, benchmarks/results (e.g. a scratch folder for "
                             "small trial runs)")
    parser.add_argument("--merge-on-read", action="store_true",
                        help="lakecompact's tables with merge_on_read = true (docs/configuration.md: Merge-on-read)")
    parser.add_argument("--nice", type=int, default=10, help="raise this process's niceness to at least this")
    args = parser.parse_args()
    if args.scenario == "report":
        print(write_performance_page().relative_to(ROOT))
        return
    if args.nice and os.nice(0) < args.nice:
        os.nice(args.nice - os.nice(0))
    if not VENV_PYTHON.exists():
        raise SystemExit(f"{VENV_PYTHON} missing: run `bash benchmarks/setup.sh` first")
    if args.scenario == "cluster" and not spark_version(sys.executable):
        raise SystemExit(f"the cluster scenario runs lakecompact on the stack's Spark, and {sys.executable} has no "
                         "pyspark: run it with the project's Python (scripts/setup.sh)")
    args.results_dir = args.results_dir.resolve()
    if args.buckets is None:
        rows = args.rows or {"merge": 1_000_000, "change-size": 1_000_000, "view-read": 1_000_000,
                            "history": 1_000_000, "cluster": 1_000_000}.get(args.scenario, 250_000)
        args.buckets = min(64, max(8, rows // 125_000))
    args.reuse_runs = {r.strip() for r in args.reuse.split(",") if r.strip()}
    if args.report_only:
        previous = args.results_dir / f"{args.name or args.scenario}.json"
        if not previous.exists():
            raise SystemExit(f"--report-only: no {previous}")
        previous_doc = json.loads(previous.read_text())
        args.reuse_runs = set(previous_doc["runs"])
        args.quiet_wait = 0
    # a report written again names the machine, date and commit of the runs it reports
    args.machine = previous_doc["machine"] if args.report_only else machine()
    started = time.monotonic()
    {"merge": scenario_merge, "change-size": scenario_change_size, "base-scaling": scenario_base_scaling,
     "landing": scenario_landing, "landing-schemaless": scenario_landing_schemaless,
     "landing-avro": scenario_landing_avro, "landing-topics": scenario_landing_topics, "view-read": scenario_view_read,
     "history": scenario_history, "small-command": scenario_small_command,
     "cluster": scenario_cluster, "verify": scenario_verify}[
        args.scenario](args)
    log(f"{args.scenario}: finished in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
