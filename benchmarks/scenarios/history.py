"""`history`: row history's cost, lakecompact with `row_history` off and on, and reads as of a moment."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from datasets import change_after, dataset
from generate import TS0
from report import HISTORY_OFF, HISTORY_ON, fmt

from .common import land_snapshot, ratio_of, summary_rows

if TYPE_CHECKING:
    from run import Run



def scenario_history(run: Run) -> None:
    """Row history's cost (#71): the merge workload (the `merge` scenario's files) by lakecompact in-process with
    `row_history` off and on, each step timed alike; then, in the run with history, a read of the view against the
    same read as of a moment between the snapshot and the change (`sql --as-of`'s rewrite onto `<t>_history`),
    with the change pending and compacted, each `--repeat` times. Ratios: history on / off, as-of / view."""
    args = run.args
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
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
