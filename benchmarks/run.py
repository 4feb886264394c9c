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
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

# the modules beside this file: `python3 benchmarks/run.py` puts benchmarks/ first on sys.path; the project's root
# goes after it, for the stack package (`import stack` in scenarios/), as pytest run from the root has it
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from datasets import BENCH, VENV_PYTHON
from engines.common import SPARK_CHECK
from measure import ROOT, core_seconds, log, loud, machine, run_process, spark_version, wait_for_quiet
from report import RESULTS, fmt, render_markdown
from report import write_page as write_performance_page
from scenarios import cluster, history, landing, merge, small_command, verify, view_read
from scenarios.common import ALL_ENGINES, ENGINES_DIR, PEERS, VIEW

HERE = Path(__file__).resolve().parent
JARS = BENCH / "jars"
# the scenarios by name, in the order --help lists them
SCENARIOS = {"merge": merge.scenario_merge, "change-size": merge.scenario_change_size,
             "base-scaling": merge.scenario_base_scaling, "landing": landing.scenario_landing,
             "landing-schemaless": landing.scenario_landing_schemaless,
             "landing-avro": landing.scenario_landing_avro, "landing-topics": landing.scenario_landing_topics,
             "view-read": view_read.scenario_view_read, "history": history.scenario_history,
             "small-command": small_command.scenario_small_command, "cluster": cluster.scenario_cluster,
             "verify": verify.scenario_verify}
PEER_JARS = {peer: peer.split("-")[0] for peer in PEERS}  # .bench/jars/<profile of benchmarks/pom.xml>
NOISY = 0.25  # share of the CPUs used by other processes above which a run's numbers are marked


def unavailable(engine: str) -> str | None:
    """Why a peer cannot run: its jars missing (setup.sh records why Maven had none), else None."""
    folder = JARS / PEER_JARS[engine]
    if any(folder.glob("*.jar")):
        return None
    why = folder / ".unavailable"
    lines = why.read_text().splitlines() if why.exists() else []
    return lines[1] if len(lines) > 1 else f"no jars in {folder}: run `bash benchmarks/setup.sh`"


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
        self._params = {**value, **({"merge_on_read": True} if self.args.merge_on_read else {}),
                        **({"class_archive": False} if self.args.no_class_archive else {})}

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
        if self.args.no_class_archive:  # a cache folder with no archive in it: the JVMs start as spark-submit's do
            env = {**(env or {}), "LAKECOMPACT_CACHE": str(work / "cache-without-class-archive")}
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
            info["core_seconds"] = core_seconds(info)
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
                    out = command(f"check {name}", ["sql", f"SELECT {SPARK_CHECK} FROM {relation}"], check_paths,
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
    parser.add_argument("--schema-versions", type=int, default=3,
                        help="landing-topics: schema versions of each table in the batch, each adding a column to the "
                             "one before (1: every event of one schema)")
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
    parser.add_argument("--no-class-archive", action="store_true",
                        help="lakecompact's commands without the class archive (class_archive.py), as a spark-submit "
                             "that is not given it starts them")
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
    SCENARIOS[args.scenario](Run(args.scenario, args))
    log(f"{args.scenario}: finished in {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
