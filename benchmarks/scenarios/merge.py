"""The merge family: `merge` (a snapshot and a change through every engine), `change-size` (a small change's
compaction against the full one) and `base-scaling` (the same change on N and 4N rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datasets import change_after, dataset
from measure import loud
from report import fmt

from .common import PEERS, READ_SQL, land_snapshot, pick_engines, ratio_of, summary_rows

if TYPE_CHECKING:
    from run import Run

DEFAULT_MERGE_ENGINES = ("lakecompact", "lakecompact-cli", "raw-spark", "delta", "iceberg-cow", "iceberg-mor",
                         "hudi-cow", "duckdb", "delta-rs")


def _peer_ops(snapshot: dict, changes: list[dict], repeat: int = 1) -> list[dict]:
    ops = [{"op": "load", "paths": [snapshot["glob"]], "step": "load snapshot"}, {"op": "check", "name": "after load"}]
    for change in changes:
        ops.append({"op": "merge", "paths": [change["glob"]], "step": "apply change"})
    ops += [{"op": "read", "step": "read after change", "repeat": repeat}, {"op": "check", "name": "after change"}]
    return ops


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


def scenario_merge(run: Run) -> None:
    args = run.args
    n, c = args.rows or 1_000_000, args.change_rows or 100_000
    engines = pick_engines(args, DEFAULT_MERGE_ENGINES)
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


def scenario_change_size(run: Run) -> None:
    args = run.args
    n = args.rows or 1_000_000
    c = args.change_rows or max(10, n // 100)
    engines = pick_engines(args, ("lakecompact", "delta", "iceberg-cow", "iceberg-mor", "hudi-cow", "duckdb"))
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


def scenario_base_scaling(run: Run) -> None:
    args = run.args
    n = args.rows or 250_000
    c = args.change_rows or max(10, n // 10)
    engines = pick_engines(args, ("lakecompact", "duckdb"))
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
