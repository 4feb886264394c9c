"""One cold `land` (or the first `compact` after it) with Spark's event log on, and the log read back as a table of
every job and stage.

    python benchmarks/profile_land.py run GLOB OUT_DIR [--driver-memory 2g]   # a fresh process: lake + event log
    python benchmarks/profile_land.py table OUT_DIR                           # the Markdown table of that log
    python benchmarks/profile_land.py compact OUT_DIR [--buckets 8]           # a fresh process: compact OUT_DIR's lake
    python benchmarks/profile_land.py table OUT_DIR/compact                   # the table of that compaction

Per job: its call site (the lakecompact line that started it), wall time; per stage under it: wall time, the summed
task time (executor run time), rows and bytes read (input + shuffle read) and written (output + shuffle write).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path


def _config(glob: str, out: Path, logs: Path, driver_memory: str, buckets: int):
    from lakecompact import config as config_module

    return config_module.from_dict({
        "warehouse": str(out / "warehouse"), "database": "lake", "defaults": {"buckets": buckets},
        "source": {"kind": "files", "paths": [glob]},
        "spark": {"master": "local[2]", "conf": {
            "spark.driver.memory": driver_memory, "spark.sql.shuffle.partitions": "16",
            "spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file:{logs / 'events'}",
            "spark.eventLog.compress": "false",
        }},
    })


def run(glob: str, out: Path, driver_memory: str, buckets: int) -> None:
    from lakecompact.landing.land import land

    if out.exists():
        shutil.rmtree(out)
    (out / "events").mkdir(parents=True)
    (out / "glob").write_text(glob)
    config = _config(glob, out, out, driver_memory, buckets)
    report, timing = _timed(config, land)
    _summarise(out, {**timing, "events_in": report.events_in, "rows_out": report.rows_out,
                     "quarantined": report.quarantined, "skipped": report.skipped})


def compact(out: Path, driver_memory: str, buckets: int) -> None:
    """Every table of OUT_DIR's lake compacted, in a fresh process; the log and summary in OUT_DIR/compact."""
    from lakecompact.compaction.compact import compact as compact_tables

    logs = out / "compact"
    if logs.exists():
        shutil.rmtree(logs)
    (logs / "events").mkdir(parents=True)
    config = _config((out / "glob").read_text(), out, logs, driver_memory, buckets)
    reports, timing = _timed(config, compact_tables)
    _summarise(logs, {**timing, "events_in": sum(r.events_in for r in reports), "step": "compact",
                      "rows_out": {r.table: r.rows_out for r in reports}, "quarantined": {}, "skipped": 0})


def _timed(config, step):
    """`step(spark, config)` in a new session: its result, and the seconds of the session's start and of the step
    (`land_s`, whichever the step)."""
    from lakecompact.spark import create_session

    started = time.monotonic()
    spark = create_session(config)
    session = time.monotonic() - started
    started = time.monotonic()
    result = step(spark, config)
    seconds = time.monotonic() - started
    spark.stop()
    return result, {"session_start_s": round(session, 2), "land_s": round(seconds, 2)}


def _summarise(folder: Path, summary: dict) -> None:
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


def _events(out: Path) -> list[dict]:
    """The events of the log in OUT_DIR/events: one file, or (rolling, Spark 4's default) a folder of parts."""
    log = max((out / "events").iterdir())
    parts = [p for p in log.iterdir() if p.name.startswith("events_")] if log.is_dir() else [log]
    parts.sort(key=lambda p: int(p.name.split("_")[1]) if p.name.split("_")[1].isdigit() else 0)
    return [json.loads(line) for part in parts for line in part.read_text().splitlines() if line.strip()]


def table(out: Path) -> str:
    jobs: dict[int, dict] = {}
    stages: dict[int, dict] = {}
    for event in _events(out):
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            props = event.get("Properties") or {}
            site = props.get("callSite.short") or event["Stage Infos"][0]["Stage Name"]
            jobs[event["Job ID"]] = {"start": event["Submission Time"], "site": site,
                                     "stages": [s["Stage ID"] for s in event["Stage Infos"]]}
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stage = stages.setdefault(info["Stage ID"], _stage())
            stage.update(name=info["Stage Name"], tasks=info["Number of Tasks"],
                         wall=(info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000)
        elif kind == "SparkListenerTaskEnd" and event.get("Task Metrics"):
            stage = stages.setdefault(event["Stage ID"], _stage())
            m = event["Task Metrics"]
            shuffle_read, shuffle_write = m["Shuffle Read Metrics"], m["Shuffle Write Metrics"]
            stage["task"] += m["Executor Run Time"] / 1000
            stage["rows_in"] += m["Input Metrics"]["Records Read"] + shuffle_read["Total Records Read"]
            stage["bytes_in"] += (m["Input Metrics"]["Bytes Read"] + shuffle_read["Remote Bytes Read"]
                                  + shuffle_read["Local Bytes Read"])
            stage["rows_out"] += m["Output Metrics"]["Records Written"] + shuffle_write["Shuffle Records Written"]
            stage["bytes_out"] += m["Output Metrics"]["Bytes Written"] + shuffle_write["Shuffle Bytes Written"]
            stage["spill"] += m["Disk Bytes Spilled"]
    summary = json.loads((out / "summary.json").read_text())
    lines = [(f"`{summary.get('step', 'land')}` {summary['land_s']} s (session start {summary['session_start_s']} s apart); "
              f"{summary['events_in']:,} events in, rows out {summary['rows_out']}, quarantined "
              f"{summary['quarantined']}, skipped {summary['skipped']}"), "",
             "| job | call site | stage | tasks | wall s | task s | rows in | MB in | rows out | MB out | spill MB |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total_task = 0.0
    for job_id, job in sorted(jobs.items()):
        wall = (job.get("end", job["start"]) - job["start"]) / 1000
        lines.append(f"| {job_id} | {job['site']} | (job) | | {wall:.2f} | | | | | | |")
        for stage_id in job["stages"]:
            s = stages.get(stage_id)
            if s is None or s.get("name") is None:  # skipped: its output was already there
                continue
            total_task += s["task"]
            lines.append(f"| | | {stage_id}: {s['name'].split(' at ')[0]} | {s['tasks']} | {s['wall']:.2f} | "
                         f"{s['task']:.2f} | {s['rows_in']:,} | {s['bytes_in'] / 1e6:,.1f} | {s['rows_out']:,} | "
                         f"{s['bytes_out'] / 1e6:,.1f} | {s['spill'] / 1e6:,.0f} |")
    in_jobs = sum((job.get("end", job["start"]) - job["start"]) / 1000 for job in jobs.values())
    lines.append(f"| all | {len(jobs)} jobs, {in_jobs:.2f} s; outside jobs {summary['land_s'] - in_jobs:.2f} s | {sum(1 for s in stages.values() if s.get('name'))} stages | | | "
                 f"{total_task:.2f} | | | | | |")
    return "\n".join(lines)


def _stage() -> dict:
    return {"name": None, "tasks": 0, "wall": 0.0, "task": 0.0, "rows_in": 0, "bytes_in": 0, "rows_out": 0,
            "bytes_out": 0, "spill": 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "compact", "table"])
    parser.add_argument("args", nargs="+")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--buckets", type=int, default=8)
    a = parser.parse_args()
    if a.command == "run":
        run(a.args[0], Path(a.args[1]), a.driver_memory, a.buckets)
    elif a.command == "compact":
        compact(Path(a.args[0]), a.driver_memory, a.buckets)
    else:
        print(table(Path(a.args[0])))


if __name__ == "__main__":
    sys.exit(main())
