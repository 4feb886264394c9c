"""The files source: `kcat -C -J` output, one JSON object per line, read from where the last run stopped."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecompact.identifiers import struct_type
from lakecompact.storage import Storage

_KCAT_LINE = struct_type([("topic", "STRING"), ("partition", "INT"), ("offset", "BIGINT"), ("key", "STRING"),
                          ("payload", "STRING")])


@dataclass(frozen=True)
class FileRange:
    """Lines [start, end) of one file (0-based), the unit a batch records so a rerun reads the same lines."""

    path: str
    start: int
    end: int
    size: int

    def to_json(self) -> dict:
        return {"path": self.path, "start": self.start, "end": self.end, "size": self.size}


def _file_path():
    """Spark's `_metadata.file_path` in Hadoop's spelling: URI escapes decoded (a '+' stays a '+'),
    and `file:/`, so it matches the paths the glob listed."""
    escaped = F.regexp_replace(F.col("_metadata.file_path"), "^file:///", "file:/")
    return F.url_decode(F.replace(escaped, F.lit("+"), F.lit("%2B")))


def _normal(path: str) -> str:
    return path.replace("file:///", "file:/")


def _lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """(path, line number, line) for whole files; a file is one row, so line numbers are exact."""
    text = spark.read.text(paths, wholetext=True).select(_file_path().alias("path"), "value")
    return text.select("path", F.posexplode(F.split("value", "\n", -1)).alias("line_no", "line"))


def plan(spark: SparkSession, storage: Storage, patterns: tuple[str, ...], landed: dict) -> list[FileRange]:
    """The new lines of every matching file: appended lines of known files, and new files.

    A last line without its newline is taken only when it is already a whole JSON object (kcat may
    still be writing it otherwise).
    """
    found: dict[str, int] = {}
    for pattern in patterns:
        for path, size in storage.list_files(pattern if "://" in pattern or pattern.startswith("file:") else f"file:{pattern}"):
            found[path] = size
    changed = [p for p, size in found.items() if size != landed.get(p, {}).get("size")]
    if not changed:
        return []
    counts = (
        spark.read.text(changed, wholetext=True)
        .select(_file_path().alias("path"), F.split("value", "\n", -1).alias("parts"))
        .select(
            "path",
            (F.size("parts") - 1).alias("terminated"),
            F.json_object_keys(F.element_at("parts", -1)).isNotNull().alias("tail_complete"),
        )
        .collect()
    )
    ranges = []
    for row in counts:
        path = _same_path(row.path, found)
        end = row.terminated + (1 if row.tail_complete else 0)
        start = landed.get(path, {}).get("lines", 0)
        if end > start:
            ranges.append(FileRange(path, start, end, found[path]))
    return sorted(ranges, key=lambda r: r.path)


def _same_path(path: str, found: dict[str, int]) -> str:
    """The glob's spelling of a path Spark read."""
    if path in found:
        return path
    return next(p for p in found if _normal(p) == _normal(path))


def read(spark: SparkSession, ranges: list[FileRange]) -> DataFrame:
    """The raw events of the planned lines: Kafka coordinates, key and payload texts, and where they came from."""
    bounds = spark.createDataFrame(
        [(_normal(r.path), r.start, r.end) for r in ranges], "path STRING, start INT, end INT"
    )
    lines = _lines(spark, [r.path for r in ranges])
    picked = lines.join(F.broadcast(bounds), "path").where(
        (F.col("line_no") >= F.col("start")) & (F.col("line_no") < F.col("end")) & (F.trim("line") != "")
    )
    parsed = picked.withColumn("j", F.from_json("line", _KCAT_LINE))
    is_object = F.json_object_keys("line").isNotNull()
    return parsed.select(
        F.col("j.topic").alias("__kafka_topic"),
        F.col("j.partition").alias("__kafka_partition"),
        F.col("j.offset").alias("__kafka_offset"),
        F.col("j.key").alias("key"),
        F.col("j.payload").alias("payload"),
        F.concat("path", F.lit(":"), (F.col("line_no") + 1).cast("string")).alias("__origin"),
        F.when(~is_object, F.lit("line is not a JSON object (malformed or truncated)"))
        .when(F.col("j.topic").isNull(), F.lit("line has no topic"))
        .alias("__line_reason"),
        F.col("line").alias("__line"),
        F.lit(None).cast("binary").alias("__value_bytes"),
    )
