"""lakecompact in one process (.bench/venv41, on the same pyspark 4.1 as the peers): the spec's ops against one
warehouse.

ops: {"op": "land", "paths": [globs], "step": name, "database": other lake's database (optional)}
   | {"op": "schema", "avsc": value .avsc, "key_avsc": key .avsc, "table": t, "topic": topic, "step": name,
      "database": ...}: `lakecompact schema --avsc` (a topic whose events carry no schema)
   | {"op": "compact", "step": name, "database": ...}: every table of the lake
   | {"op": "read", "step": name, "relation": "lake.public_customers", "repeat": n, "where": "", "as_of": moment}
   | {"op": "check", "name": name, "relation": ..., "as_of": moment}
"as_of" (a read or check): the relation read as `lakecompact sql --as-of MOMENT` reads it, from its row history (the
query rewritten by lakecompact's own as_of_query, once, before the step).
spec "lake" may give "source" (the [source] of every op, instead of the files of each "land") and "registry".
Step times exclude the JVM start (recorded as the step "session start").
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from common import run_main, spark_check, spark_conf, timed_read
from measure import tree_cpu_seconds  # benchmarks/measure.py: the harness's reading of /proc


def _plain(report):
    if report is None:
        return None
    if isinstance(report, list):
        return [_plain(r) for r in report]
    if dataclasses.is_dataclass(report):
        return dataclasses.asdict(report)
    return repr(report)


def as_of(spark, config, relation: str, moment: str) -> str:
    """`relation` as of `moment`, as `sql --as-of` reads it (lakecompact.views.read.run_sql): a query of it rewritten
    onto the row history of the tables that keep one."""
    from lakecompact.lake.catalog import Catalog
    from lakecompact.views.as_of import as_of_query, moment_of

    history = {t for t in Catalog(spark, config).tables() if config.table(t).row_history}
    return f"({as_of_query(f'SELECT * FROM {relation}', moment_of(moment), config.database, history)}) AS as_of"


def body(spec: dict, rec) -> None:
    from lakecompact import config as config_module
    from lakecompact.spark import create_session

    lake = spec["lake"]

    def config(paths, database=None):
        return config_module.from_dict({
            "warehouse": lake["warehouse"],
            "database": database or lake.get("database", "lake"),
            "source": lake.get("source") or {"kind": "files", "paths": list(paths)},
            **({"registry": lake["registry"]} if lake.get("registry") else {}),
            "defaults": {"buckets": lake["buckets"], **lake.get("defaults", {})},
            "spark": {"master": spec.get("master", "local[2]"), "conf": {**spark_conf(spec), **lake.get("conf", {})}},
        })

    paths: list[str] = list(spec.get("initial_paths") or ["/nonexistent/*.jsonl"])
    rec.cpu_clock = lambda: tree_cpu_seconds(os.getpid())
    with rec.step("session start", startup=True):
        spark = create_session(config(paths))
    import pyspark

    rec.result["info"].update(spark_version=spark.version, pyspark=pyspark.__version__)
    from lakecompact.compaction.compact import compact
    from lakecompact.landing.land import land
    from lakecompact.schema import extract

    for op in spec["ops"]:
        kind = op["op"]
        if kind == "land":
            paths = list(op.get("paths", paths))
            with rec.step(op["step"]) as info:
                report = land(spark, config(paths, op.get("database")))
            info["report"] = _plain(report)
            quarantined = getattr(report, "quarantined", None) or {}
            if sum(quarantined.values()):
                info["QUARANTINED"] = quarantined
                print(f"!!! lakecompact quarantined events: {quarantined}", file=sys.stderr)
        elif kind == "schema":
            with rec.step(op["step"]):
                extract.run(spark, config(paths, op.get("database")), avsc=op["avsc"], key_avsc=op["key_avsc"],
                            table=op["table"], topic=op["topic"], dry_run=False)
        elif kind == "compact":
            with rec.step(op["step"]) as info:
                reports = compact(spark, config(paths, op.get("database")))
            info["report"] = _plain(reports)
        elif kind in ("read", "check"):
            relation = op.get("relation", "lake.public_customers")
            if op.get("as_of"):
                relation = as_of(spark, config(paths), relation, op["as_of"])
            if kind == "read":
                timed_read(rec, spark, op["step"], relation, op.get("repeat", 1), op.get("where", ""))
            else:
                spark_check(rec, spark, op["name"], relation, op.get("where", ""))
        else:
            raise ValueError(f"unknown op {kind}")
    spark.stop()


if __name__ == "__main__":
    run_main("lakecompact", body)
