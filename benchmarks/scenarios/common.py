"""What the scenarios share, with the runner too: the engines' names, the view every lake has, the ops that
land a snapshot, the summary's rows and ratios."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from measure import ROOT
from report import SPARK_PEERS

if TYPE_CHECKING:
    from run import Run

ENGINES_DIR = ROOT / "benchmarks" / "engines"
PEERS = SPARK_PEERS
ALL_ENGINES = ("lakecompact", "lakecompact-cli", "raw-spark", *PEERS, "duckdb", "delta-rs")
VIEW = "lake.public_customers"
READ_SQL = f"SELECT count(*), sum(score) FROM {VIEW}"


def pick_engines(args, default) -> list[str]:
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


def ratio_of(seconds, reference):
    """seconds / reference to 3 significant digits, or None."""
    return float(f"{seconds / reference:.3g}") if seconds is not None and reference else None


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
