"""`small-command`: lakecompact's commands as whole processes on a handful of events, against 15 s."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from datasets import change_after, dataset

from .common import READ_SQL, land_snapshot

if TYPE_CHECKING:
    from run import Run



def scenario_small_command(run: Run) -> None:
    args = run.args
    n = args.rows or 250_000
    tiny = args.change_rows or 10
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
