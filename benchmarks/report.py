"""Every rendering of the benchmarks' results: the Markdown of one results file (render_markdown: the
benchmarks/results/<name>.md that run.py writes beside the .json), and docs/performance.md from
benchmarks/results/*.json, each speed target with the ratio of its latest run.

    python benchmarks/run.py report        # run.py also writes the page after every scenario it runs

The page says only what the results files say, so it cannot drift from them (tests/unit/test_performance_page.py
fails when the committed page is not what this module makes of the committed results). What was tried and what
each change bought is in benchmarks/HISTORY.md, not here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
PAGE = ROOT / "docs" / "performance.md"
SPARK_PEERS = ("delta", "delta-dv", "iceberg-cow", "iceberg-mor", "hudi-cow", "hudi-mor")
COPY_ON_WRITE_PEERS = ("delta", "iceberg-cow", "hudi-cow")
NAMES = {"delta": "Delta", "delta-dv": "Delta with deletion vectors", "iceberg-cow": "Iceberg copy-on-write",
         "iceberg-mor": "Iceberg merge-on-read", "hudi-cow": "Hudi copy-on-write", "hudi-mor": "Hudi merge-on-read"}
# scenarios/cluster.py's runs
CLUSTER_RUN, LOCAL_RUN, LOCAL_S3_RUN = "lakecompact-cluster-s3", "lakecompact-local", "lakecompact-local-s3"


# -- one results file's Markdown -----------------------------------------------------------------------------
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


def s3_tables(runs: dict[str, dict], steps: list[str], whole: dict) -> str:
    """The S3 requests of each run on S3 (`runs`: the runs with their steps) per step and operation, and the
    copies; `whole`: the cluster run's requests over all of it."""
    out = []
    for run_name, title in ((CLUSTER_RUN, "the cluster run (spark-submit)"), (LOCAL_S3_RUN, "lakecompact on local[2]")):
        infos = {s["step"]: (s.get("info", {}).get("s3") or {})
                 for s in runs.get(run_name, {}).get("steps", [])}
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


# -- docs/performance.md: the targets and the measures of them -----------------------------------------------
@dataclass(frozen=True)
class Measure:
    value: float  # a ratio, or a count when the target's unit is not "×"
    detail: str  # the numbers it is made of


@dataclass(frozen=True)
class Target:
    what: str
    goal: str
    met: Callable[[float], bool]
    issue: str
    results: tuple[str, ...]  # the results files that measure it: the latest run among them counts
    measure: Callable[[dict], Measure | None]
    unit: str = "×"


# -- reading a results file ------------------------------------------------------------------------------------
def _steps(doc: dict, run: str) -> dict[str, float]:
    return {s["step"]: s["seconds"] for s in doc["steps"] if s["run"] == run and s.get("seconds") is not None}


def _sum(doc: dict, run: str, *steps: str) -> float | None:
    found = _steps(doc, run)
    return sum(found[s] for s in steps) if steps and all(s in found for s in steps) else None


def _median(doc: dict, run: str, prefix: str) -> float | None:
    """The median of a repeated step (`<prefix> #1`, `#2`, …), or the step itself when it ran once."""
    values = sorted(v for s, v in _steps(doc, run).items() if s == prefix or s.startswith(f"{prefix} #"))
    return values[len(values) // 2] if values else None


def _best(times: dict[str, float | None]) -> tuple[str, float] | None:
    known = {k: v for k, v in times.items() if v}
    return min(known.items(), key=lambda kv: kv[1]) if known else None


def _date(doc: dict) -> datetime:
    return datetime.strptime(doc["machine"]["date"], "%Y-%m-%d %H:%M UTC")


# -- the measures ----------------------------------------------------------------------------------------------
def compaction(peers: tuple[str, ...]) -> Callable[[dict], Measure | None]:
    """The change's compaction (`compact v2`) against the fastest of `peers`' whole MERGE (or upsert)."""
    def measure(doc: dict) -> Measure | None:
        ours, best = _sum(doc, "lakecompact", "compact v2"), _best({p: _sum(doc, p, "apply change") for p in peers})
        if not ours or not best:
            return None
        return Measure(ours / best[1], f"compaction {ours:.1f} s, {NAMES[best[0]]} {best[1]:.1f} s")
    return measure


def cold_compaction(peers: tuple[str, ...]) -> Callable[[dict], Measure | None]:
    """The change's compaction as a command of its own (as `compact` times it, without its JVM start) against the
    fastest of `peers`' MERGE in a JVM of its own, on a table another process loaded."""
    def measure(doc: dict) -> Measure | None:
        ours = next((s["info"].get("compaction_seconds") for s in doc["steps"]
                     if s["run"] == "lakecompact-cli" and s["step"] == "compact v2"), None)
        best = _best({p: _sum(doc, f"{p} (own JVM) apply change", "apply change") for p in peers})
        if not ours or not best:
            return None
        return Measure(ours / best[1], f"`compact` {ours:.1f} s, {NAMES[best[0]]} {best[1]:.1f} s")
    return measure


def small_change(kind: str) -> Callable[[dict], Measure | None]:
    """A 1% change's compaction (`kind`: spread or clustered) against the fastest peer's MERGE of the same events."""
    ours_step = {"spread": "compact: 1% change spread over all keys",
                 "clustered": "compact: 1% change clustered in 5% of the keys"}[kind]

    def measure(doc: dict) -> Measure | None:
        ours, best = _sum(doc, "lakecompact", ours_step), _best({p: _sum(doc, p, f"apply {kind}") for p in SPARK_PEERS})
        if not ours or not best:
            return None
        return Measure(ours / best[1], f"compaction {ours:.1f} s, {NAMES[best[0]]} {best[1]:.1f} s")
    return measure


def snapshot_load(doc: dict) -> Measure | None:
    """Landing the snapshot and its first compaction against the fastest Spark peer's load."""
    lands = [s for s in _steps(doc, "lakecompact") if s.startswith("land snapshot")]
    ours = _sum(doc, "lakecompact", *lands, "compact v1") if lands else None
    best = _best({p: _sum(doc, p, "load snapshot") for p in SPARK_PEERS})
    if not ours or not best:
        return None
    return Measure(ours / best[1], f"land + first compaction {ours:.1f} s, {NAMES[best[0]]} {best[1]:.1f} s")


def readable(doc: dict) -> Measure | None:
    """Until the change reads correctly: `land` and a read of the view, against a peer's MERGE and the same read."""
    def total(run: str, apply: str, read: str) -> float | None:
        applied, read_s = _sum(doc, run, apply), _median(doc, run, read)
        return applied + read_s if applied is not None and read_s is not None else None

    ours = total("lakecompact", "land change", "read view (pending increments)")
    best = _best({p: total(p, "apply change", "read after change") for p in SPARK_PEERS})
    if not ours or not best:
        return None
    return Measure(ours / best[1], f"land + read {ours:.1f} s, {NAMES[best[0]]} MERGE + read {best[1]:.1f} s")


def hour_readable(doc: dict) -> Measure | None:
    """The hour's last batch until it reads correctly, with the hour's other batches before it: `land` and a read
    of the view (eleven batches pending), against a peer's twelfth MERGE and the same read."""
    last = doc["params"].get("batches")

    def total(run: str, apply: str, read: str) -> float | None:
        applied, read_s = _sum(doc, run, apply), _median(doc, run, read)
        return applied + read_s if applied is not None and read_s is not None else None

    ours = total("lakecompact", f"land batch {last}", "read view (pending increments)")
    best = _best({p: total(p, f"apply batch {last}", "read after the change") for p in SPARK_PEERS})
    if not ours or not best:
        return None
    return Measure(ours / best[1], f"land + read {ours:.1f} s, {NAMES[best[0]]} MERGE + read {best[1]:.1f} s")


def landing(again: bool) -> Callable[[dict], Measure | None]:
    """Events per second of `land` over the reference's (the peers' load step: the envelope parsed with a known
    schema, parquet written), each the first in its process or (`again`) the second."""
    def measure(doc: dict) -> Measure | None:
        mine = [s for s in _steps(doc, "lakecompact") if s.startswith("land") and s.endswith(" again") == again]
        ours = _sum(doc, "lakecompact", *mine) if mine else None
        ref = _sum(doc, "raw-spark", "the same again" if again else "parse with a known schema + write parquet")
        events = doc["params"].get("events")
        if not ours or not ref or not events:
            return None
        return Measure(ref / ours, f"{events / ours:,.0f} events/s, the reference {events / ref:,.0f}")
    return measure


def many_topics(again: bool) -> Callable[[dict], Measure | None]:
    """Events per second of one `land` of the events over many topics (tables), over the same events of one."""
    def measure(doc: dict) -> Measure | None:
        step = "land again" if again else "land"
        one, many = _sum(doc, "one-table", step), _sum(doc, "tables", step)
        if not one or not many:
            return None
        return Measure(one / many, f"{doc['params']['topics']} tables {many:.1f} s, one table {one:.1f} s")
    return measure


def land_memory(doc: dict) -> Measure | None:
    """One `land` of the whole snapshot as a process: the peak memory of python + JVM, when it landed."""
    steps = [s for s in doc["steps"] if s["run"] == "lakecompact-cli" and s["step"].startswith("land")]
    if len(steps) != 1:
        return None
    step, params = steps[0], doc["params"]
    peak = step["info"].get("peak_rss_mb") or 0
    landed = step.get("seconds") is not None and not doc["runs"]["lakecompact-cli"].get("error")
    detail = (f"{params['events']:,} events ({params['bytes'] / 1e9:.1f} GB) at spark.driver.memory = "
              f"{params['driver_memory']}: " + (f"landed in {step['seconds']:.0f} s" if landed else "failed"))
    return Measure(peak / 1024 if landed else 0.0, detail)


def verify_cost(doc: dict) -> Measure | None:
    """`lakecompact verify` of the lake against its source table, whole process, against a count(*) of the table
    over JDBC that the database computes; the detail has the read of every row too."""
    ours = _sum(doc, "lakecompact-cli", "verify")
    counted, read = _sum(doc, "source", "count(*) in the database"), _sum(doc, "source", "count of every row read")
    if not ours or not counted or doc["runs"]["lakecompact-cli"].get("error"):
        return None
    return Measure(ours / counted, f"verify {ours:.1f} s (found the lake equal), count(*) {counted:.1f} s, every row "
                                   f"read and counted {read:.1f} s ({ours / read:.1f}×)")


def change_size(step: str) -> Callable[[dict], Measure | None]:
    def measure(doc: dict) -> Measure | None:
        full, small = _sum(doc, "lakecompact", "compact: full (v1 from the snapshot)"), _sum(doc, "lakecompact", step)
        if not full or not small:
            return None
        return Measure(small / full, f"{small:.1f} s, the full compaction {full:.1f} s")
    return measure


def base_scaling(doc: dict) -> Measure | None:
    n, n4 = doc["params"].get("rows"), doc["params"].get("rows_4x")
    small, big = _sum(doc, f"lakecompact@N={n}", "compact v2"), _sum(doc, f"lakecompact@N={n4}", "compact v2")
    if not small or not big:
        return None
    return Measure(big / small, f"compaction {big:.1f} s on {n4:,} rows, {small:.1f} s on {n:,}")


def view_read(doc: dict) -> Measure | None:
    pending = _median(doc, "lakecompact", "read view (pending increments)")
    compacted = _median(doc, "lakecompact", "read view (compacted base)")
    if not pending or not compacted:
        return None
    return Measure(pending / compacted, f"{pending:.2f} s with the hour pending, {compacted:.2f} s compacted")


HISTORY_OFF, HISTORY_ON = "lakecompact@history=off", "lakecompact@history=on"  # scenarios/history.py's runs


def history_cost(step: str) -> Callable[[dict], Measure | None]:
    """A compaction of the merge workload with `row_history` on against the same with it off, in one run."""
    def measure(doc: dict) -> Measure | None:
        on, off = _sum(doc, HISTORY_ON, step), _sum(doc, HISTORY_OFF, step)
        if not on or not off:
            return None
        cpu = {run: next((s["info"].get("cpu_seconds") for s in doc["steps"] if s["run"] == run and s["step"] == step),
                         None) for run in (HISTORY_ON, HISTORY_OFF)}
        used = f"; CPU {cpu[HISTORY_ON]:.1f} s against {cpu[HISTORY_OFF]:.1f} s, " \
               f"{cpu[HISTORY_ON] / cpu[HISTORY_OFF]:.2f}×" if all(cpu.values()) else ""
        return Measure(on / off, f"{on:.1f} s with row history, {off:.1f} s without{used}")
    return measure


def as_of_read(doc: dict) -> Measure | None:
    """`sql --as-of` a moment between the snapshot and the change against the same read of the view, compacted."""
    as_of = _median(doc, HISTORY_ON, "read as of between snapshot and change (compacted base)")
    view = _median(doc, HISTORY_ON, "read view (compacted base)")
    if not as_of or not view:
        return None
    return Measure(as_of / view, f"{as_of:.2f} s as of {doc['params'].get('as_of')}, {view:.2f} s the view")


def small_command(doc: dict) -> Measure | None:
    """The slowest whole command over 15 s, and the compaction's peak memory as the base grows."""
    timed = [(seconds, step, run.split("=", 1)[1]) for run in doc["runs"] if run.startswith("lakecompact-cli@N=")
             for step, seconds in _steps(doc, run).items()]
    if not timed:
        return None
    seconds, step, rows = max(timed)
    memory = [s["info"].get("peak_rss_mb") for s in doc["steps"]
              if s["run"].startswith("lakecompact-cli@N=") and s["step"] == "compact"]
    grew = f"; peak memory of `compact` {memory[0]:,} → {memory[-1]:,} MB at 4× the base" if len(memory) == 2 \
        and all(memory) else ""
    return Measure(seconds / 15, f"slowest: `{step}` {seconds:.1f} s at {int(rows):,} rows{grew}")


def on_s3(run: str) -> Callable[[dict], Measure | None]:
    def measure(doc: dict) -> Measure | None:
        theirs, local = _sum(doc, run, "compact v2"), _sum(doc, LOCAL_RUN, "compact v2")
        if not theirs or not local:
            return None
        return Measure(theirs / local, f"`compact` {theirs:.1f} s as a whole process, locally {local:.1f} s")
    return measure


def data_copies(doc: dict) -> Measure | None:
    """COPY requests of data files (.parquet) that S3 served over the timed steps of the runs on S3."""
    infos = [s["info"]["s3"] for s in doc["steps"]
             if s["run"] in (CLUSTER_RUN, LOCAL_S3_RUN) and isinstance(s.get("info", {}).get("s3"), dict)]
    if not infos:
        return None
    data = sum(len(i.get("copies_data", [])) for i in infos)
    other = sum(len(i.get("copies_other", [])) for i in infos)
    requests = sum(i.get("requests", 0) for i in infos)
    return Measure(data, f"of {requests:,} S3 requests; {other} copies of other objects")


TWO_KEYS_8 = "cluster-8-two-keys"  # the reference of requests_with_buckets, a run with 8 buckets


def requests_with_buckets(doc: dict) -> Measure | None:
    """S3 requests of a compaction that changes two keys (so writes the same few files whatever the buckets) of a
    256-bucket table (`doc`) against the same of an 8-bucket table (the latest TWO_KEYS_8 results), on the cluster."""
    reference = RESULTS / f"{TWO_KEYS_8}.json"
    if not reference.exists():
        return None

    def requests(of: dict) -> int | None:
        return next((s["info"]["s3"]["requests"] for s in of["steps"] if s["run"] == CLUSTER_RUN
                     and s["step"] == "compact v2" and isinstance(s.get("info", {}).get("s3"), dict)), None)

    many, few = requests(doc), requests(json.loads(reference.read_text()))
    if not many or not few:
        return None
    buckets = doc["params"].get("buckets")
    return Measure(many / few, f"{many:,} requests at {buckets} buckets, {few:,} at 8")


TARGETS = (
    Target("compaction of 100,000 events into 1,000,000 rows (`merge_on_read`) against the fastest copy-on-write "
           "peer's MERGE", "at most 0.8×", lambda v: v <= 0.8, "#10, #57", ("merge-mor",),
           compaction(COPY_ON_WRITE_PEERS)),
    Target("the same at 5,000,000 rows + 500,000 events", "at most 0.8×", lambda v: v <= 0.8, "#10, #57",
           ("merge-5m-mor",), compaction(COPY_ON_WRITE_PEERS)),
    Target("compaction of 100,000 events into 1,000,000 rows (`merge_on_read`) against the fastest peer of all",
           "at most 1.0×", lambda v: v <= 1.0, "#10, #57", ("merge-mor",), compaction(SPARK_PEERS)),
    Target("the same at 5,000,000 rows + 500,000 events", "at most 1.0×", lambda v: v <= 1.0, "#10, #57",
           ("merge-5m-mor",), compaction(SPARK_PEERS)),
    Target("compaction of 100,000 events into 1,000,000 rows, copy-on-write tables (the touched buckets rewritten), "
           "against the fastest copy-on-write peer's MERGE", "at most 0.8×", lambda v: v <= 0.8, "#10", ("merge",),
           compaction(COPY_ON_WRITE_PEERS)),
    Target("the same, each step its own process (`compact` a command of its own, each peer's MERGE a JVM of its "
           "own), against the fastest copy-on-write peer", "at most 0.8×", lambda v: v <= 0.8, "#57", ("merge-mor",),
           cold_compaction(COPY_ON_WRITE_PEERS)),
    Target("the same against the fastest peer of all", "at most 1.0×", lambda v: v <= 1.0, "#57", ("merge-mor",),
           cold_compaction(SPARK_PEERS)),
    Target("each step its own process at 5,000,000 rows + 500,000 events, against the fastest copy-on-write peer",
           "at most 0.8×", lambda v: v <= 0.8, "#57", ("merge-5m-mor",), cold_compaction(COPY_ON_WRITE_PEERS)),
    Target("the same against the fastest peer of all", "at most 1.0×", lambda v: v <= 1.0, "#57", ("merge-5m-mor",),
           cold_compaction(SPARK_PEERS)),
    Target("each step its own process, `compact` without the class archive (as a spark-submit not given it starts "
           "the driver), against the fastest peer of all", "at most 1.0×", lambda v: v <= 1.0, "#70",
           ("merge-mor-no-archive",), cold_compaction(SPARK_PEERS)),
    Target("the same at 5,000,000 rows + 500,000 events", "at most 1.0×", lambda v: v <= 1.0, "#70",
           ("merge-5m-mor-no-archive",), cold_compaction(SPARK_PEERS)),
    Target("a 1% change (10,000 events on 1,000,000 rows) spread over all keys: compaction against the fastest peer's "
           "MERGE of the same events", "at most 1.0×", lambda v: v <= 1.0, "#57", ("change-size-mor",),
           small_change("spread")),
    Target("the same, the change clustered in 5% of the keys", "at most 1.0×", lambda v: v <= 1.0, "#57",
           ("change-size-mor",), small_change("clustered")),
    Target("the 1% change spread over all keys at 5,000,000 rows (50,000 events)", "at most 1.0×", lambda v: v <= 1.0,
           "#57", ("change-size-5m-mor",), small_change("spread")),
    Target("the same, clustered in 5% of the keys", "at most 1.0×", lambda v: v <= 1.0, "#57",
           ("change-size-5m-mor",), small_change("clustered")),
    Target("a snapshot of 1,000,000 rows: land + first compaction against the fastest Spark peer's load",
           "at most 1.0×", lambda v: v <= 1.0, "#57", ("merge", "merge-mor"), snapshot_load),
    Target("the same at 5,000,000 rows", "at most 1.0×", lambda v: v <= 1.0, "#57", ("merge-5m", "merge-5m-mor"),
           snapshot_load),
    Target("a batch of 100,000 events until a reader sees it: `land` + a read of the view, against a peer's MERGE + "
           "the same read", "at most 1.0×", lambda v: v <= 1.0, "#57", ("merge", "merge-mor"), readable),
    Target("the same at 5,000,000 rows (a batch of 500,000 events)", "at most 1.0×", lambda v: v <= 1.0, "#57",
           ("merge-5m", "merge-5m-mor"), readable),
    Target("the same at 5,000,000 rows, a batch of 100,000 events", "at most 1.0×", lambda v: v <= 1.0, "#57",
           ("merge-5m-mor-100k",), readable),
    Target("the same for the last batch of an hour of 12 (100,000 events in all), the others before it: `land` + a "
           "read of the view with the hour pending, against a merge-on-read peer's twelfth MERGE + the same read",
           "at most 1.0×", lambda v: v <= 1.0, "#57", ("view-read",), hour_readable),
    Target("the same at 5,000,000 rows", "at most 1.0×", lambda v: v <= 1.0, "#57", ("view-read-5m",), hour_readable),
    Target("landing throughput, the first `land` of a process, against the peers' load step (the kcat lines read, "
           "the envelope parsed with a known schema, parquet written)", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing",), landing(again=False)),
    Target("the same, each the second in its process (a warm JVM, as `run` keeps)", "at least 0.8×",
           lambda v: v >= 0.8, "#57", ("landing",), landing(again=True)),
    Target("the same at 5,000,000 events, the first `land` of a process", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing-5m",), landing(again=False)),
    Target("the same at 5,000,000 events, each the second in its process", "at least 0.8×", lambda v: v >= 0.8,
           "#57", ("landing-5m",), landing(again=True)),
    *[Target(f"landing throughput, {form}, at spark.driver.memory = {memory} (both sides), "
             f"{'each the second in its process' if again else 'the first `land` of a process'}",
             "at least 0.8×", lambda v: v >= 0.8, "#70", (f"{scenario}-{memory}",), landing(again=again))
      for scenario, form in (("landing", "JSON with schemas"), ("landing-schemaless", "JSON without schemas"),
                             ("landing-avro", "Avro from Kafka"))
      for memory in ("1g", "2g") for again in (False, True)],
    Target("many tables: the 1,000,000 events over 100 topics (each in its own files, each table in the run's schema "
           "versions, each adding a column), one `land` of a process, against the same events of one topic", "at least 0.8×", lambda v: v >= 0.8, "#70", ("landing-topics",),
           many_topics(again=False)),
    Target("the same, each the second in its process", "at least 0.8×", lambda v: v >= 0.8, "#70",
           ("landing-topics",), many_topics(again=True)),
    Target("landing throughput of Kafka Connect JSON without embedded schemas (the table's schema given ahead, not "
           "timed), the first `land` of a process, against the peers' load step of the same lines",
           "at least 0.8×", lambda v: v >= 0.8, "#57", ("landing-schemaless",), landing(again=False)),
    Target("the same, each the second in its process", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing-schemaless",), landing(again=True)),
    Target("the same at 5,000,000 events, the first `land` of a process", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing-schemaless-5m",), landing(again=False)),
    Target("the same at 5,000,000 events, each the second in its process", "at least 0.8×", lambda v: v >= 0.8,
           "#57", ("landing-schemaless-5m",), landing(again=True)),
    Target("landing throughput of Avro in Confluent's wire format from Kafka (schemas in a registry), the first "
           "`land` of a process, against the same topic read by Spark's Kafka source and decoded by `from_avro` with "
           "a known schema", "at least 0.8×", lambda v: v >= 0.8, "#57", ("landing-avro",), landing(again=False)),
    Target("the same, each the second in its process", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing-avro",), landing(again=True)),
    Target("the same at 5,000,000 events, the first `land` of a process", "at least 0.8×", lambda v: v >= 0.8, "#57",
           ("landing-avro-5m",), landing(again=False)),
    Target("the same at 5,000,000 events, each the second in its process", "at least 0.8×", lambda v: v >= 0.8,
           "#57", ("landing-avro-5m",), landing(again=True)),
    Target("one `land` of 4,000,000 events with embedded schemas in one batch at `spark.driver.memory = 2g`, "
           "local[2]: peak memory of the process (python + JVM)", "lands", lambda v: v > 0, "#57",
           ("landing-4m",), land_memory, unit=" GB"),
    Target("`verify` of 1,000,000 rows against PostgreSQL, whole process, against a count(*) of the table over JDBC",
           "reported", lambda v: v > 0, "#59", ("verify",), verify_cost),
    Target("a 1% change spread over all keys against a full compaction", "at most 0.25×", lambda v: v <= 0.25, "#10",
           ("change-size", "change-size-mor"), change_size("compact: 1% change spread over all keys")),
    Target("a 1% change clustered in 5% of the keys against a full compaction", "at most 0.10×",
           lambda v: v <= 0.10, "#10", ("change-size", "change-size-mor"),
           change_size("compact: 1% change clustered in 5% of the keys")),
    Target("the same change on 4× the base", "below 1.5×", lambda v: v < 1.5, "#10", ("base-scaling",),
           base_scaling),
    Target("a read of the view with an hour of increments pending (12 batches, 100,000 events) against the compacted "
           "view", "at most 1.5×", lambda v: v <= 1.5, "#10", ("view-read",), view_read),
    Target("compaction of 100,000 events into 1,000,000 rows with row history on (`row_history = true`: the events "
           "kept too) against the same with it off", "at most 1.3×", lambda v: v <= 1.3, "#71", ("history",),
           history_cost("compact v2")),
    Target("the same for the snapshot's first compaction (1,000,000 rows, which start the history)", "at most 1.3×",
           lambda v: v <= 1.3, "#71", ("history",), history_cost("compact v1")),
    Target("a read as of a moment between the snapshot and the change (`sql --as-of`, from `<t>_history`) of "
           "1,000,000 rows against the same read of the view", "reported", lambda v: v > 0, "#71", ("history",),
           as_of_read),
    Target("a command on a handful of events, whole process, against 15 s", "below 1.0×", lambda v: v < 1.0, "#10",
           ("small-command",), small_command),
    Target("compaction by `spark-submit` on a Spark cluster, warehouse on S3, against `local[2]` with a local "
           "warehouse", "at most 1.5×", lambda v: v <= 1.5, "#56", ("cluster",), on_s3(CLUSTER_RUN)),
    Target("compaction on `local[2]` with the warehouse on S3, against a local warehouse", "at most 1.5×",
           lambda v: v <= 1.5, "#56", ("cluster",), on_s3(LOCAL_S3_RUN)),
    Target("data files (.parquet) copied by S3 (CopyObject, UploadPartCopy) in those runs", "none",
           lambda v: v == 0, "#56", ("cluster",), data_copies, unit=""),
    Target("S3 requests of a compaction that changes two keys of a table with 256 buckets, against the same with 8 "
           "(spark-submit on the cluster): they grow with the files written, not with the buckets", "at most 1.5×",
           lambda v: v <= 1.5, "#69", ("cluster-256-two-keys",), requests_with_buckets),
)

NOT_MEASURED = (
    "the peers on S3, where they cannot run on the stack's cluster (#56).",
)
# results files written before the runner recorded each engine's Spark: their peers ran on Spark 3.5
BEFORE_ONE_SPARK = "the peers on Spark 3.5 (Delta 3.3.2, Iceberg 1.10.1, Hudi 1.1.1), lakecompact on Spark 4"


def spark_of(doc: dict) -> str:
    """The Spark the results' Spark engines ran on, in words."""
    versions = sorted({v or "unknown" for v in doc.get("spark_versions", {}).values()})
    if "spark_versions" not in doc:
        return BEFORE_ONE_SPARK
    return f"every Spark engine on Spark {versions[0]}" if len(versions) == 1 else \
        "not one Spark: " + ", ".join(versions)


# -- the page ---------------------------------------------------------------------------------------------------
def _docs() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(RESULTS.glob("*.json"))}


def latest(target: Target, docs: dict[str, dict]) -> tuple[str, Measure] | None:
    """The target's measure in the latest run (by the run's date) of the results files that have it."""
    found = [(_date(docs[name]), name, m) for name in target.results if name in docs
             if (m := target.measure(docs[name])) is not None]
    if not found:
        return None
    _, name, measure = max(found, key=lambda f: f[0])
    return name, measure


def rows(docs: dict[str, dict] | None = None) -> list[tuple[Target, str | None, Measure | None]]:
    docs = _docs() if docs is None else docs
    return [(t, *(latest(t, docs) or (None, None))) for t in TARGETS]


def _link(name: str, kind: str) -> str:
    return f"../benchmarks/results/{name}.{kind}"


def _value(target: Target, measure: Measure | None) -> str:
    if measure is None:
        return "—"
    if target.unit == "×":
        return f"**{measure.value:.2f}×**"
    return f"**{measure.value:.1f}{target.unit}**" if target.unit else f"**{measure.value:g}**"


def _by_spark(docs: dict[str, dict], names: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name in names:
        grouped.setdefault(spark_of(docs[name]), []).append(name)
    return grouped


def render(docs: dict[str, dict] | None = None) -> str:
    docs = _docs() if docs is None else docs
    table = rows(docs)
    out = [
        "# Performance",
        "",
        ("What you learn here: how lakecompact's landing and compaction compare with Delta, Iceberg and Hudi on the "
         "same Spark machine and the same Debezium event files, which of the project's speed targets it meets today, "
         "and what it costs on a Spark cluster with the warehouse on S3. Each number is the ratio from the latest run "
         "of a `benchmarks/run.py` scenario; the peers ran on the same files in the same run. "
         "How to run the scenarios: [`benchmarks/README.md`](../benchmarks/README.md). What was tried and what each "
         "change bought: [`benchmarks/HISTORY.md`](../benchmarks/HISTORY.md)."),
        "",
        ("This page is generated from `benchmarks/results/*.json` by `python benchmarks/run.py report` (and after "
         "every scenario the runner runs): edit `benchmarks/report.py`, not this file."),
        "",
        "## Targets",
        "",
        ("A ratio is lakecompact's seconds over the other side's (below 1: lakecompact is faster), except landing "
         "throughput, which is events per second (above 1: lakecompact is faster)."),
        "",
        "| target | goal | latest | met | issue | results |",
        "| --- | --- | ---: | --- | --- | --- |",
    ]
    used: list[str] = []
    for target, name, measure in table:
        met = "—" if measure is None else ("yes" if target.met(measure.value) else "**no**")
        where = "not measured" if name is None else \
            f"[chart]({_link(name, 'png')}), [table]({_link(name, 'md')})"
        mode = "; `merge_on_read` tables" if name and docs[name]["params"].get("merge_on_read") and \
            "merge_on_read" not in target.what else ""
        detail = f" ({measure.detail}{mode})" if measure else ""
        out.append(f"| {target.what} | {target.goal} | {_value(target, measure)}{detail} | {met} | {target.issue} | "
                   f"{where} |")
        if name and name not in used:
            used.append(name)
    out += ["", "Not measured by any scenario yet:", ""] + [f"- {item}" for item in NOT_MEASURED]
    machines = sorted({f"{d['machine']['nproc']} cores, {d['machine']['memory_gib']} GiB, {d['machine']['cpu']}, "
                       f"{d['machine']['java']}" for name, d in docs.items() if name in used})
    out += [
        "",
        "## Reading the numbers",
        "",
        "- The runs: " + "; ".join(machines) + ". The machine is shared and its "
        "speed varies by up to 2× from hour to hour: only ratios from one run compare.",
        ("- Each engine on `local[2]` with the same driver memory and shuffle partitions. The Spark they ran on: "
         + "; ".join(f"{spark} ({', '.join(names)})" for spark, names in _by_spark(docs, used).items())
         + ". Where that is not one Spark, part of any difference is Spark's own; `benchmarks/run.py` runs every "
         "Spark engine on one (`.bench/venv41`)."),
        ("- Every engine's final table is checked against the others (rows, sum, checksum): each scenario's table "
         "says so under \"Correctness\"."),
        "",
        "## Charts",
    ]
    for name in used:
        doc = docs[name]
        modes = [*(["`merge_on_read`"] if doc["params"].get("merge_on_read") else []),
                 *(["commands without the class archive"] if doc["params"].get("class_archive") is False else [])]
        mode = f" ({', '.join(modes)})" if modes else ""
        out += ["", f"### {doc['title']}{mode}", "",
                f"Run of {doc['machine']['date']}; every step in [`{name}.md`]({_link(name, 'md')}).", "",
                f"![{name}]({_link(name, 'png')})"]
    return "\n".join(out) + "\n"


def write_page() -> Path:
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(render())
    return PAGE


if __name__ == "__main__":
    print(write_page())
