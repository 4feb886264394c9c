"""The landing reference on the same Spark as lakecompact and the peers (.bench/venv41): spark.read.json of the kcat
files (schema inferred, the way one would do it by hand) and a parquet write of what it read. It does not decode the
Debezium payloads: it is the floor for "read these events and write them as parquet".

ops: {"op": "json-to-parquet", "paths": [...], "step": name}
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_main, spark_session


def body(spec: dict, rec) -> None:
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    with rec.step("session start", startup=True):
        spark = spark_session(spec, {"spark.sql.warehouse.dir": str(work / "spark-warehouse")}, "bench-raw-spark")
    import pyspark

    rec.result["info"].update(spark_version=spark.version, pyspark=pyspark.__version__)
    for i, op in enumerate(spec["ops"]):
        if op["op"] != "json-to-parquet":
            raise ValueError(f"unknown op {op['op']}")
        target = str(work / f"raw-{i}")
        with rec.step(op["step"]) as info:
            spark.read.json(op["paths"]).write.mode("overwrite").parquet(target)
        info["rows"] = spark.read.parquet(target).count()
    spark.stop()


if __name__ == "__main__":
    run_main("raw-spark", body)
