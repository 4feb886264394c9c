"""Shared by the engine processes (all run by .bench/venv41's Python, the Spark ones on its pyspark 4.1): the spec
they get, the result they write, the checksum every engine computes the same way, and the parsing of the kcat files
with Spark.

Every engine process is started as `python <engine>.py SPEC.json RESULT.json`; it appends its steps to
RESULT.json as it goes (so a crash keeps the steps before it) and sets "error" when a step fails.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

TABLE_COLUMNS = ("id", "name", "score", "bio")

# The correctness check, the same in every engine: live rows, sum(score), and the sum of the first 32 bits of
# md5(id|name|score|bio) (a BIGINT sum: no overflow below 2^31 rows).
SPARK_CHECK = (
    "count(*) AS rows, sum(score) AS score_sum, "
    "sum(CAST(conv(substr(md5(concat_ws('|', CAST(id AS STRING), name, CAST(score AS STRING), bio)), 1, 8), 16, 10)"
    " AS BIGINT)) AS checksum"
)
DUCKDB_CHECK = (
    "count(*) AS rows, sum(score) AS score_sum, "
    "sum(('0x' || substr(md5(concat_ws('|', CAST(id AS VARCHAR), name, CAST(score AS VARCHAR), bio)), 1, 8))::BIGINT)"
    " AS checksum"
)
READ_QUERY = "count(*) AS rows, sum(score) AS score_sum"

# kcat -J line, and the Debezium envelope fields the peers need (payload with the schema embedded, or not)
KCAT_SCHEMA = "topic STRING, `partition` INT, `offset` BIGINT, key STRING, payload STRING"
_IMAGE = "STRUCT<id: BIGINT, name: STRING, score: INT, bio: STRING>"
_ENVELOPE = f"before: {_IMAGE}, after: {_IMAGE}, source: STRUCT<lsn: BIGINT, ts_ms: BIGINT>, op: STRING"
PAYLOAD_SCHEMA = f"STRUCT<payload: STRUCT<{_ENVELOPE}>, {_ENVELOPE}>"


def load_spec() -> tuple[dict, Path]:
    spec = json.loads(Path(sys.argv[1]).read_text())
    return spec, Path(sys.argv[2])


class Recorder:
    """Collects step times and checks; rewrites the result file after each."""

    def __init__(self, engine: str, out: Path):
        self.out = out
        self.result = {"engine": engine, "steps": [], "checks": {}, "error": None, "info": {},
                       "pid": os.getpid(), "started": time.time()}
        self.cpu_clock = None  # set by an engine: CPU seconds used so far, recorded per step as cpu_seconds
        self.flush()

    def flush(self) -> None:
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.result, indent=1, default=str))
        tmp.replace(self.out)

    @contextmanager
    def step(self, name: str, **info):
        print(f"[{self.result['engine']}] {name} ...", file=sys.stderr, flush=True)
        started, cpu = time.perf_counter(), self.cpu_clock() if self.cpu_clock else None
        entry = {"step": name, "info": dict(info)}
        yield entry["info"]
        entry["seconds"] = round(time.perf_counter() - started, 3)
        if cpu is not None:
            entry["info"]["cpu_seconds"] = round(self.cpu_clock() - cpu, 2)
        self.result["steps"].append(entry)
        print(f"[{self.result['engine']}] {name}: {entry['seconds']:.2f}s", file=sys.stderr, flush=True)
        self.flush()

    def check(self, name: str, rows, score_sum, checksum) -> None:
        values = {"rows": _int(rows), "score_sum": _int(score_sum), "checksum": _int(checksum)}
        self.result["checks"][name] = values
        print(f"[{self.result['engine']}] check {name}: {values}", file=sys.stderr, flush=True)
        self.flush()

    def fail(self, exc: BaseException) -> None:
        self.result["error"] = f"{type(exc).__name__}: {exc}".strip()[:2000]
        self.result["traceback"] = traceback.format_exc()[-6000:]
        self.flush()


def _int(value):
    return None if value is None else int(value)


def run_main(engine: str, body) -> None:
    """Run body(spec, recorder); a failure is recorded, and the process exits 1."""
    spec, out = load_spec()
    recorder = Recorder(engine, out)
    try:
        body(spec, recorder)
    except BaseException as exc:  # noqa: BLE001 - the harness reports it
        recorder.fail(exc)
        traceback.print_exc()
        sys.exit(1)
    recorder.result["finished"] = time.time()
    recorder.flush()


# -- Spark -----------------------------------------------------------------------------------------------
def spark_conf(spec: dict) -> dict[str, str]:
    """Settings every Spark engine of a run gets alike (lakecompact adds its own on top)."""
    return {
        "spark.driver.memory": spec.get("driver_memory", "8g"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(spec.get("shuffle_partitions", 16)),
        "spark.sql.session.timeZone": "UTC",
        **spec.get("extra_spark_conf", {}),
    }


def spark_session(spec: dict, extra: dict[str, str], app: str, jars: list[str] = ()):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(spec.get("master", "local[2]")).appName(app)
    conf = {**spark_conf(spec), **extra}
    if jars:
        conf["spark.jars"] = ",".join(jars)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_events(spark, paths: list[str]):
    """Decoded change events of the kcat files: id, op, name, score, bio, lsn (tombstones dropped). The payload
    is parsed with the envelope at its top level and under `payload`: either form, the schema embedded or not."""
    from pyspark.sql import functions as F

    lines = spark.read.schema(KCAT_SCHEMA).json(paths)
    parsed = lines.where(F.col("payload").isNotNull()).select(F.from_json("payload", PAYLOAD_SCHEMA).alias("m"))
    return _event_rows(parsed, lambda name: F.coalesce(F.col(f"m.payload.{name}"), F.col(f"m.{name}")))


def spark_avro_events(spark, kafka: str, topic: str, avro_schema: str):
    """The same columns from a topic of Avro values in Confluent's wire format: Spark's Kafka source, the 5-byte
    header (magic byte, schema id) cut off, from_avro with the writer schema known in advance."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    messages = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka).option("subscribe", topic)
                .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    parsed = messages.where(F.col("value").isNotNull()).select(
        from_avro(F.expr("substring(value, 6)"), avro_schema).alias("m"))
    return _event_rows(parsed, lambda name: F.col(f"m.{name}"))


def _event_rows(parsed, env):
    """id, op, name, score, bio, lsn of the envelopes; env(name): an envelope field's column."""
    from pyspark.sql import functions as F

    op = env("op")
    image = F.when(op == "d", env("before")).otherwise(env("after"))
    return parsed.select(
        image.getField("id").alias("id"),
        op.alias("op"),
        image.getField("name").alias("name"),
        image.getField("score").alias("score"),
        image.getField("bio").alias("bio"),
        env("source").getField("lsn").alias("lsn"),
    )


def spark_latest_per_key(events):
    """The change as a MERGE source: the latest event per key by LSN."""
    from pyspark.sql import functions as F

    latest = events.groupBy("id").agg(F.max(F.struct("lsn", "op", "name", "score", "bio")).alias("e"))
    return latest.select("id", "e.op", "e.name", "e.score", "e.bio", "e.lsn")


def spark_check(recorder: Recorder, spark, name: str, relation: str | list[str], where: str = "") -> None:
    """The check of a relation, or the sum of the checks of several (each a query of its own: a union of a hundred
    views is slow to plan)."""
    rows = [spark.sql(f"SELECT {SPARK_CHECK} FROM {one} {where}").first()
            for one in ([relation] if isinstance(relation, str) else relation)]
    recorder.check(name, *[sum(_int(row[k]) or 0 for row in rows) for k in ("rows", "score_sum", "checksum")])


def timed_read(recorder: Recorder, spark, name: str, relation: str, repeat: int = 1, where: str = "") -> None:
    """`SELECT count(*), sum(score)` over the table, `repeat` times (each a step `name` #i)."""
    for i in range(repeat):
        label = name if repeat == 1 else f"{name} #{i + 1}"
        with recorder.step(label) as info:
            row = spark.sql(f"SELECT {READ_QUERY} FROM {relation} {where}").first()
            info["rows"], info["score_sum"] = int(row["rows"]), _int(row["score_sum"])
