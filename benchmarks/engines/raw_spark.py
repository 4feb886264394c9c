"""The landing references on the same Spark as lakecompact and the peers (.bench/venv41).

events-to-parquet: the peers' load step without their table format: the kcat lines read with their schema, the
Debezium envelope parsed with a schema known in advance (common.spark_events), the rows written as parquet.
json-to-parquet: spark.read.json of the kcat files (schema inferred, as one would by hand), written as it was read.
avro-to-parquet: the same as events-to-parquet for a Kafka topic of Avro values in Confluent's wire format, read with
Spark's Kafka source and decoded by from_avro with the writer schema known in advance (common.spark_avro_events).

jdbc-count: the verify scenario's references: a table's count(*) in the database over JDBC ("pushed": the database
counts), or every row read by Spark's JDBC source and counted; events-to-jdbc (its setup): the snapshot's rows
written to a table of the database.

ops: {"op": "events-to-parquet" | "json-to-parquet", "paths": [...], "step": name}
   | {"op": "events-to-jdbc", "paths": [...], "jdbc": {url, dbtable, user, password, driver}, "step": name}
   | {"op": "jdbc-count", "jdbc": {...}, "pushed": bool, "step": name}
   | {"op": "avro-to-parquet", "kafka": bootstrap servers, "topic": name, "avro_schema": JSON text, "step": name}
   | {"op": "check", "name": name}: the checksum of the parquet the op before wrote
spec "spark_jars": jars for spark.jars (Spark's Kafka and Avro data sources)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import TABLE_COLUMNS, run_main, spark_avro_events, spark_check, spark_events, spark_session

_LOADS = {
    "events-to-parquet": lambda spark, op: spark_events(spark, op["paths"]),
    "json-to-parquet": lambda spark, op: spark.read.json(op["paths"]),
    "avro-to-parquet": lambda spark, op: spark_avro_events(spark, op["kafka"], op["topic"], op["avro_schema"]),
}


def body(spec: dict, rec) -> None:
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    with rec.step("session start", startup=True):
        spark = spark_session(spec, {"spark.sql.warehouse.dir": str(work / "spark-warehouse")}, "bench-raw-spark",
                              spec.get("spark_jars", []))
    import pyspark

    rec.result["info"].update(spark_version=spark.version, pyspark=pyspark.__version__)
    target = None
    for i, op in enumerate(spec["ops"]):
        if op["op"] == "events-to-jdbc":
            with rec.step(op["step"]) as info:
                rows = spark_events(spark, op["paths"]).where("op <> 'd'").select(*TABLE_COLUMNS)
                rows.write.format("jdbc").options(**op["jdbc"]).option("batchsize", "10000").mode("overwrite").save()
            continue
        if op["op"] == "jdbc-count":
            with rec.step(op["step"]) as info:
                table = spark.read.format("jdbc").options(**op["jdbc"], pushDownAggregate=str(op["pushed"]).lower())
                info["rows"] = table.load().agg({"*": "count"}).first()[0]
            continue
        if op["op"] == "check":
            spark_check(rec, spark, op["name"], f"parquet.`{target}`")
            continue
        if op["op"] not in _LOADS:
            raise ValueError(f"unknown op {op['op']}")
        target = str(work / f"raw-{i}")
        with rec.step(op["step"]) as info:
            _LOADS[op["op"]](spark, op).write.mode("overwrite").parquet(target)
        info["rows"] = spark.read.parquet(target).count()
    spark.stop()


if __name__ == "__main__":
    run_main("raw-spark", body)
