"""`verify`: `lakecompact verify` of a lake against the same rows in the stack's PostgreSQL."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from datasets import dataset
from measure import log

import stack

from .common import land_snapshot, ratio_of

if TYPE_CHECKING:
    from run import Run



@contextmanager
def postgres_database(name: str) -> Iterator[tuple[object, dict[str, str]]]:
    """The stack's PostgreSQL (started when it is not running, and then stopped at the end) with a database `name`
    made for the run and dropped after it: (stack, the JDBC options of its table public.customers)."""
    started = stack.component("postgres").pid() is None
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


def scenario_verify(run: Run) -> None:
    """`lakecompact verify` of a lake of N rows against the same rows in PostgreSQL (the stack's), as one command,
    against a count(*) of the table over JDBC: pushed down (the database counts), and every row read by Spark's
    JDBC source. The lake (the snapshot landed and compacted) and the table (its rows written over JDBC) are setup,
    not timed."""
    args = run.args
    n = args.rows or 1_000_000
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
