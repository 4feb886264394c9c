"""The table formats lakecompact is measured against, on the benchmarks' Spark (pyspark 4.1 in .bench/venv41, the
one lakecompact's engines run on too), local[2]; their builds are the ones benchmarks/pom.xml names.

engine (spec["engine"]):
  delta        Delta Lake: load = DataFrame write; change = MERGE INTO (copy-on-write rewrite of touched files)
  delta-dv     the same with deletion vectors on (merge-on-read deletes)
  iceberg-cow  Iceberg (Hadoop catalog): INSERT; MERGE INTO with write.{merge,update,delete}.mode=copy-on-write
  iceberg-mor  the same with merge-on-read (position delete files)
  hudi-cow     Hudi COPY_ON_WRITE: bulk_insert; upsert with ordering (precombine) field lsn, deletes as
               _hoodie_is_deleted
  hudi-mor     the same, MERGE_ON_READ
Hudi publishes no bundle for Spark 4: benchmarks/run.py reports its engines as not run, without starting this, as
long as .bench/jars/hudi holds no jars.
Every engine reads the same kcat files: spark.read.json with the kcat line schema, from_json of the Debezium
envelope; the change is reduced to the latest event per key by LSN (max of struct(lsn, ...)), then
  WHEN MATCHED AND s.op = 'd' THEN DELETE / WHEN MATCHED THEN UPDATE / WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT.
ops: {"op": "load"|"merge", "paths": [...], "step": name} | {"op": "read", "step": name, "repeat": n}
   | {"op": "check", "name": name}
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_main, spark_check, spark_events, spark_latest_per_key, spark_session, timed_read

COLUMNS = "id BIGINT, name STRING, score INT, bio STRING, lsn BIGINT"
MERGE_CLAUSES = (
    "WHEN MATCHED AND s.op = 'd' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET t.name = s.name, t.score = s.score, t.bio = s.bio, t.lsn = s.lsn "
    "WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT (id, name, score, bio, lsn) VALUES (s.id, s.name, s.score, s.bio, s.lsn)"
)


class Delta:
    jars = "delta"

    def __init__(self, spec, work: Path, dv: bool):
        self.path, self.dv = str(work / "delta" / "customers"), dv
        self.relation = f"delta.`{self.path}`"

    def conf(self):
        conf = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
        if self.dv:
            conf["spark.databricks.delta.properties.defaults.enableDeletionVectors"] = "true"
        return conf

    def load(self, spark, rows):
        rows.select("id", "name", "score", "bio", "lsn").write.format("delta").mode("overwrite").save(self.path)

    def merge(self, spark, changes):
        changes.createOrReplaceTempView("changes")
        spark.sql(f"MERGE INTO {self.relation} t USING changes s ON t.id = s.id {MERGE_CLAUSES}")

    def table_info(self, spark):
        detail = spark.sql(f"DESCRIBE DETAIL {self.relation}").first()
        return {"files": detail["numFiles"], "bytes": detail["sizeInBytes"], "properties": detail["properties"]}


class Iceberg:
    jars = "iceberg"

    def __init__(self, spec, work: Path, mode: str):
        self.warehouse, self.mode = str(work / "iceberg"), mode
        self.relation = "ice.db.customers"

    def conf(self):
        return {"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                "spark.sql.catalog.ice.type": "hadoop",
                "spark.sql.catalog.ice.warehouse": self.warehouse}

    def load(self, spark, rows):
        mode = self.mode
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
        spark.sql(f"DROP TABLE IF EXISTS {self.relation}")
        spark.sql(
            f"CREATE TABLE {self.relation} ({COLUMNS}) USING iceberg TBLPROPERTIES ('format-version' = '2', "
            f"'write.merge.mode' = '{mode}', 'write.update.mode' = '{mode}', 'write.delete.mode' = '{mode}')"
        )
        rows.select("id", "name", "score", "bio", "lsn").writeTo(self.relation).append()

    def merge(self, spark, changes):
        changes.createOrReplaceTempView("changes")
        spark.sql(f"MERGE INTO {self.relation} t USING changes s ON t.id = s.id {MERGE_CLAUSES}")

    def table_info(self, spark):
        files = spark.sql(f"SELECT content, count(*) AS n, sum(file_size_in_bytes) AS bytes FROM {self.relation}.files "
                          "GROUP BY content").collect()
        return {"files_by_content": {str(r["content"]): {"files": r["n"], "bytes": r["bytes"]} for r in files}}


class Hudi:
    jars = "hudi"

    def __init__(self, spec, work: Path, table_type: str):
        self.path, self.table_type = str(work / "hudi" / "customers"), table_type
        self.relation = "hudi_customers"

    def conf(self):
        return {"spark.serializer": "org.apache.spark.serializer.KryoSerializer",
                "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
                "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog"}

    def options(self, operation):
        return {
            "hoodie.table.name": "customers",
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.operation": operation,
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "lsn",
            "hoodie.table.ordering.fields": "lsn",
            "hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.datasource.write.partitionpath.field": "",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        }

    def load(self, spark, rows):
        from pyspark.sql import functions as F

        frame = rows.select("id", "name", "score", "bio", "lsn", F.lit(False).alias("_hoodie_is_deleted"))
        frame.write.format("hudi").options(**self.options("bulk_insert")).mode("overwrite").save(self.path)
        self.register(spark)

    def merge(self, spark, changes):
        from pyspark.sql import functions as F

        frame = changes.select("id", "name", "score", "bio", "lsn", (F.col("op") == "d").alias("_hoodie_is_deleted"))
        frame.write.format("hudi").options(**self.options("upsert")).mode("append").save(self.path)
        self.register(spark)

    def register(self, spark):
        spark.read.format("hudi").load(self.path).createOrReplaceTempView(self.relation)

    def table_info(self, spark):
        files = [p for p in glob.glob(f"{self.path}/**/*", recursive=True) if Path(p).is_file() and ".hoodie" not in p]
        return {"data_files": len(files), "bytes": sum(Path(p).stat().st_size for p in files)}


def make(spec: dict, work: Path):
    engine = spec["engine"]
    return {
        "delta": lambda: Delta(spec, work, dv=False),
        "delta-dv": lambda: Delta(spec, work, dv=True),
        "iceberg-cow": lambda: Iceberg(spec, work, "copy-on-write"),
        "iceberg-mor": lambda: Iceberg(spec, work, "merge-on-read"),
        "hudi-cow": lambda: Hudi(spec, work, "COPY_ON_WRITE"),
        "hudi-mor": lambda: Hudi(spec, work, "MERGE_ON_READ"),
    }[engine]()


def body(spec: dict, rec) -> None:
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    table = make(spec, work)
    jars = sorted(glob.glob(f"{spec['jars']}/{table.jars}/*.jar"))
    if not jars:
        raise RuntimeError(f"no jars in {spec['jars']}/{table.jars}: run benchmarks/setup.sh")
    with rec.step("session start", startup=True):
        spark = spark_session(spec, {**table.conf(), "spark.sql.warehouse.dir": str(work / "spark-warehouse")},
                              f"bench-{spec['engine']}", jars)
    import pyspark

    rec.result["info"].update(spark_version=spark.version, pyspark=pyspark.__version__,
                              jars=[Path(j).name for j in jars])
    for op in spec["ops"]:
        kind = op["op"]
        if kind == "load":
            with rec.step(op["step"]):
                table.load(spark, spark_events(spark, op["paths"]))
        elif kind == "merge":
            with rec.step(op["step"]):
                table.merge(spark, spark_latest_per_key(spark_events(spark, op["paths"])))
        elif kind == "read":
            timed_read(rec, spark, op["step"], table.relation, op.get("repeat", 1))
        elif kind == "check":
            spark_check(rec, spark, op["name"], table.relation)
            try:
                rec.result["info"][f"table after {op['name']}"] = table.table_info(spark)
            except Exception as exc:  # noqa: BLE001 - informational only
                rec.result["info"][f"table after {op['name']}"] = f"unavailable: {exc}"
        else:
            raise ValueError(f"unknown op {kind}")
    spark.stop()


if __name__ == "__main__":
    spec_engine = __import__("json").loads(Path(sys.argv[1]).read_text())["engine"]
    run_main(spec_engine, body)
