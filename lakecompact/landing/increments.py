"""A batch's writes (docs/design.md "Landing protocol"): each table's increment, written to its final folder and
counted as written, then committed (its counts, then its partition in the metastore); and each table's quarantine.
Every write replaces what a crashed attempt of the same batch left there."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecompact import crashpoints
from lakecompact.lake.catalog import UNPLACED, Catalog
from lakecompact.lake.model import META_COLUMNS
from lakecompact.lake.storage import folder_stats
from lakecompact.landing.intent import LandIntent
from lakecompact.naming import increments_table
from lakecompact.report import say
from lakecompact.spark import write_counted

# the message as it came (Avro values as bytes), so that `requeue` can land it again once the cause is fixed
QUARANTINE_COLUMNS = (
    "__reason", "__kafka_topic", "__kafka_partition", "__kafka_offset", "key", "payload", "__origin", "__value_bytes"
)
QUARANTINE_SCHEMA = (
    "__reason STRING, __kafka_topic STRING, __kafka_partition INT, __kafka_offset BIGINT, key STRING, "
    "payload STRING, __origin STRING, __value_bytes BINARY"
)


class IncrementWriter:
    def __init__(self, spark: SparkSession, catalog: Catalog):
        self.spark, self.catalog = spark, catalog
        self.storage = catalog.storage
        self.held_taken: dict[str, int] = {}  # table -> truncates held until its key was known, landed this batch
        self._holding: dict[str, int] = {}  # increment folder -> the held truncates written into it
        self.made: set[str] = set()
        self.rerun = False

    def new_batch(self, made: set[str], rerun: bool) -> None:
        """`made`: the tables made by this batch (filled as they are made); `rerun`: this attempt of the batch
        follows another, which may have made tables."""
        self.held_taken.clear()
        self._holding.clear()
        self.made, self.rerun = made, rerun

    def write_increment(self, table: str, rows: DataFrame | None, intent: LandIntent) -> tuple[int, int]:
        """Write the decoded rows without a reason to the table's increment and commit it: (rows written, rows with
        a reason).

        Those with a reason are only counted here, in the same pass: decoding them again for the quarantine
        costs less than keeping every decoded row (with its message text) for a second read, as nearly every
        batch has none."""
        if rows is None:
            return 0, 0
        location = self.catalog.paths(table).increment(intent.hour, intent.batch)
        if self.storage.exists(folder_stats(location)):
            return self._kept_increment(table, rows, intent, location)
        written = self.write_rows(table, rows, location, intent.batch)
        rejected = written.pop("rejected")
        self.commit(table, intent, location, written)
        return written["rows"], rejected

    def write_rows(self, table: str, rows: DataFrame, location: str, batch: int) -> dict[str, int]:
        """The rows without a reason written to `location` (what a crashed attempt wrote there first deleted), not
        yet committed, with the table's held truncates: {rows, max_source_ts_ms, rejected (rows with a reason)},
        counted as written."""
        schema = self.catalog.require(table)
        columns = schema.column_names + [n for n, _ in META_COLUMNS]
        self.storage.delete(location)  # a crashed attempt's, written in part
        rows = self._with_held_truncates(table, rows, location, batch)

        def write(frame: DataFrame) -> None:
            good = frame.where(F.col("__reason").isNull())
            # columns added by a later group of this batch read as null in the earlier ones
            good.select(*[F.col(c) if c in good.columns else F.lit(None).cast(t).alias(c)
                          for c, t in schema.columns + list(META_COLUMNS)]).select(*columns).write.parquet(location)

        def written() -> DataFrame:
            return self.spark.read.parquet(location).withColumn("__reason", F.lit(None).cast("string"))

        landed = F.col("__reason").isNull()
        return write_counted(
            rows, write, written,
            rows=F.count(F.when(landed, 1)), max_source_ts_ms=F.max(F.when(landed, F.col("__source_ts_ms"))),
            rejected=F.count(F.when(~landed, 1)),
        )

    def hold_truncates(self, table: str, rows: DataFrame, batch: int) -> tuple[int, int]:
        """Keep the truncates of a table whose key is not known yet (docs/design.md "Keys and keyless tables") until
        the batch that makes the table: (rows held, rows with a reason), counted as written. A rerun of the batch
        writes its folder again."""
        location = self.catalog.paths(table).held_truncates_of(batch)
        self.storage.delete(location)  # a crashed attempt's
        held = F.col("__reason").isNull()
        counted = write_counted(
            rows,
            lambda frame: frame.where(held).drop("__reason").write.parquet(location),
            lambda: self.spark.read.parquet(location).withColumn("__reason", F.lit(None).cast("string")),
            rows=F.count(F.when(held, 1)), rejected=F.count(F.when(~held, 1)),
        )
        if counted["rows"]:
            self.storage.write_json(folder_stats(location), {"rows": counted["rows"]}, overwrite=True)
        else:
            self.storage.delete(location)
        return counted["rows"], counted["rejected"]

    def _with_held_truncates(self, table: str, rows: DataFrame, location: str, batch: int) -> DataFrame:
        """`rows` and the truncates earlier batches held for the table until it was made (only a table made by
        this batch, or by an attempt of it, can have any). The increment that takes them records its batch once it
        is written whole (`commit`), so that a later batch, should their folder outlive that one, does not take
        them again."""
        if table not in self.made and not self.rerun:
            return rows
        held = self._held_before(table, batch)
        if not held:
            return rows
        self._holding[location] = self._held_count(held)
        say(f"  {table}: made now that its key is known; the {self._holding[location]} truncate(s) held until then "
            f"land with its rows")
        return rows.unionByName(truncate_rows(self.spark.read.parquet(*held)), allowMissingColumns=True)

    def _held_before(self, table: str, batch: int) -> list[str]:
        """The folders of the truncates held by batches before `batch` and landed by no committed batch. A folder
        of `batch` itself is an attempt's that held them where this one lands them with the table's rows: it goes."""
        held = self.catalog.held_truncates(table)
        if not held:
            return []
        own = self.catalog.paths(table).held_truncates_of(batch)
        if own in held:
            self.storage.delete(own)
            held.remove(own)
        landed = self.storage.read_json_or_none(self.catalog.paths(table).held_truncates_landed)
        if landed is not None and landed["batch"] != batch:
            self.release_held_truncates(table)  # landed by an earlier batch, committed since
            return []
        return held

    def _held_count(self, folders: list[str]) -> int:
        return sum(self.storage.read_json(folder_stats(folder))["rows"] for folder in folders)

    def release_held_truncates(self, table: str) -> None:
        """The held truncates gone once the batch that landed them is committed: their folder, then the record
        of that batch."""
        paths = self.catalog.paths(table)
        self.storage.delete(paths.held_truncates)
        self.storage.delete(paths.held_truncates_landed)

    def release_all_landed_held_truncates(self, committed: int) -> None:
        """After a crash between a batch's commit and its clean-up: the held truncates of every table that a
        committed batch landed."""
        for table in self.catalog.tables():
            landed = self.storage.read_json_or_none(self.catalog.paths(table).held_truncates_landed)
            if landed is not None and landed["batch"] <= committed:
                self.release_held_truncates(table)

    def commit(self, table: str, intent: LandIntent, location: str, written: dict[str, int]) -> None:
        """The increment written at `location` committed: its counts written after its rows (and the record that
        it took the held truncates), then registered (none written: the folder goes)."""
        if location in self._holding:  # before the counts, which make a rerun keep the increment as written
            self.storage.write_json(self.catalog.paths(table).held_truncates_landed, {"batch": intent.batch},
                                    overwrite=True)
            self.held_taken[table] = self._holding.pop(location)
        if written["rows"]:
            self.storage.write_json(folder_stats(location), {**written, "landed_at": intent.landed_at},
                                    overwrite=True)
        else:
            self.storage.delete(location)
        crashpoints.reached("increments-written")
        if written["rows"]:
            self._register(table, intent, location)

    def _kept_increment(self, table: str, rows: DataFrame, intent: LandIntent, location: str) -> tuple[int, int]:
        """A rerun's increment that the interrupted attempt wrote whole (its counts are written after its rows): it
        stays as it is, since once registered a compaction (under its own lock, not this one) may be reading it or
        folding it in; written again, its folder would be gone for a while, then in part."""
        count = self.storage.read_json(folder_stats(location))["rows"]
        rejected = rows.where(F.col("__reason").isNotNull()).count()  # they go to the quarantine again
        landed = self.storage.read_json_or_none(self.catalog.paths(table).held_truncates_landed)
        if landed is not None and landed["batch"] == intent.batch:  # it took the held truncates
            self.held_taken[table] = self._held_count(self._held_before(table, intent.batch))
        self._register(table, intent, location)
        return count, rejected

    def _register(self, table: str, intent: LandIntent, location: str) -> None:
        partition = [("__hour", intent.hour), ("__batch", intent.batch)]
        self.catalog.add_partitions(increments_table(table), [(partition, location)])
        crashpoints.reached("partitions-added")

    def write_quarantine(self, quarantine: list[tuple[str | None, DataFrame]], batch: int) -> dict[str, int]:
        """Each table's rejected events of the batch written to `<its quarantine>/batch=N` (counted as written),
        in place: a crash leaves the batch uncommitted, and its rerun writes the folder again; {table (UNPLACED:
        of no table): count}."""
        by_table: dict[str, list[DataFrame]] = {}
        for table, rejected in quarantine:
            by_table.setdefault(table or UNPLACED, []).append(rejected.select(*QUARANTINE_COLUMNS))
        quarantined = {}
        for name, frames in sorted(by_table.items()):
            target = f"{self.catalog.quarantine(None if name == UNPLACED else name)}/batch={batch}"
            self.storage.delete(target)  # a crashed attempt's
            count = write_counted(
                union_all(frames),
                lambda frame, target=target: frame.write.parquet(target),
                lambda target=target: self.spark.read.schema(QUARANTINE_SCHEMA).parquet(target),
                rows=F.count(F.lit(1)),
            )["rows"]
            if count:
                self.storage.write_json(folder_stats(target), {"rows": count}, overwrite=True)
                quarantined[name] = count
            else:
                self.storage.delete(target)
        return quarantined


def truncate_rows(truncates: DataFrame) -> DataFrame:
    """Truncates decoded with any schema of their table, for its increment: a truncate's row columns are null, so
    only the meta columns (and a reason, if there) are taken."""
    return truncates.select(*[n for n, _ in META_COLUMNS], *[c for c in ("__reason",) if c in truncates.columns])


def line_quarantine(raw: DataFrame) -> DataFrame:
    """Lines that are no event at all (not JSON, no topic), in the quarantine's columns."""
    return raw.where(F.col("__line_reason").isNotNull()).select(
        F.col("__line_reason").alias("__reason"),
        "__kafka_topic",
        "__kafka_partition",
        "__kafka_offset",
        "key",
        F.col("__line").alias("payload"),
        "__origin",
        "__value_bytes",
    )


def decode_rejects(rows: DataFrame) -> DataFrame:
    """The decoded events that have a reason, as they came (the message texts under their quarantine names)."""
    return rows.where(F.col("__reason").isNotNull()).select(
        *[F.col(f"__raw_{c}").alias(c) if c in ("key", "payload") else F.col(c) for c in QUARANTINE_COLUMNS]
    )


def with_reason(events: DataFrame, reason: str) -> DataFrame:
    return events.select(F.lit(reason).alias("__reason"), *QUARANTINE_COLUMNS[1:])


def union_all(frames: list[DataFrame]) -> DataFrame:
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame, allowMissingColumns=True)
    return result
