"""`view-read`: reads of the view with an hour of increments pending against the compacted view, and the
merge-on-read peers' reads before and after the same MERGEs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datasets import change_after, dataset
from report import fmt

from .common import PEERS, VIEW, land_snapshot, pick_engines, ratio_of

if TYPE_CHECKING:
    from run import Run

# the peers whose reads meet pending changes (delete files, deletion vectors) as lakecompact's view does
VIEW_READ_PEERS = ("iceberg-mor", "delta-dv")


def scenario_view_read(run: Run) -> None:
    args = run.args
    n = args.rows or 1_000_000
    c = args.change_rows or 100_000
    batches = args.batches
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
    engines = pick_engines(args, ("lakecompact", "duckdb", *VIEW_READ_PEERS))
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
