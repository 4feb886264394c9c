"""The landing references on the same Spark as lakecompact and the peers (.bench/venv41).

events-to-parquet: the peers' load step without their table format: the kcat lines read with their schema, the
Debezium envelope parsed with a schema known in advance (common.spark_events), the rows written as parquet.
json-to-parquet: spark.read.json of the kcat files (schema inferred, as one would by hand), written as it was read.

ops: {"op": "events-to-parquet" | "json-to-parquet", "paths": [...], "step": name}
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_main, spark_events, spark_session

_LOADS = {
    "events-to-parquet": spark_events,
    "json-to-parquet": lambda spark, paths: spark.read.json(paths),
}


def body(spec: dict, rec) -> None:
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    with rec.step("session start", startup=True):
        spark = spark_session(spec, {"spark.sql.warehouse.dir": str(work / "spark-warehouse")}, "bench-raw-spark")
    import pyspark

    rec.result["info"].update(spark_version=spark.version, pyspark=pyspark.__version__)
    for i, op in enumerate(spec["ops"]):
        if op["op"] not in _LOADS:
            raise ValueError(f"unknown op {op['op']}")
        target = str(work / f"raw-{i}")
        with rec.step(op["step"]) as info:
            _LOADS[op["op"]](spark, op["paths"]).write.mode("overwrite").parquet(target)
        info["rows"] = spark.read.parquet(target).count()
    spark.stop()


if __name__ == "__main__":
    run_main("raw-spark", body)
