"""The scenarios' event files, generated once by benchmarks/generate.py and kept under .bench/data/<name>.

BENCH is the harness's own folder (the venv every engine runs with, the jars, the data, the work, the logs);
BENCH_DIR moves it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from measure import ROOT, log, run_process

HERE = Path(__file__).resolve().parent
BENCH = Path(os.environ.get("BENCH_DIR", ROOT / ".bench"))
VENV_PYTHON = BENCH / "venv41" / "bin" / "python"


def generator_hash() -> str:
    """The generator's VERSION: cached data sets are made again when it changes."""
    found = re.search(r"^VERSION = (\d+)", (HERE / "generate.py").read_text(), re.MULTILINE)
    return f"v{found.group(1) if found else 0}"


def dataset(name: str, kind: str, rows: int, args, fresh: bool = False, **extra) -> dict:
    """The kcat files of one snapshot or change, generated once and kept under .bench/data/NAME (`fresh`: the
    generator asked again, for data it keeps elsewhere and checks itself: a Kafka topic)."""
    out = BENCH / "data" / name
    want = {"kind": kind, "rows": rows, "events_per_file": args.events_per_file,
            "generator": generator_hash(), **{k: v for k, v in extra.items()}}
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
