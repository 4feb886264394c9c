"""`lakecompact compact` and `lakecompact rollback`.

Per table, under its lock (DESIGN "Commit protocols"):
1. converge the metastore to the highest manifest, and archive what that version consumed (crash recovery);
2. read the pending increments and only the base buckets they touch;
3. resolve the latest state per key with the same SQL as the view, write base vN+1 for those buckets;
4. write the manifest (the version now exists), point the touched `<t>_base` partitions at vN+1;
5. drop and archive the consumed increments; keep K versions and collect older folders.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from lakecompact.catalog import Catalog, TablePaths, semantics_sql
from lakecompact.compaction import changes
from lakecompact.compaction.lock import exclusive_lock
from lakecompact.compaction.manifest import Manifest, Manifests
from lakecompact.config import Config
from lakecompact.errors import RollbackError
from lakecompact.report import say, seconds_since, warn
from lakecompact.schema.model import BASE_EXTRA, META_COLUMNS, TableSchema

VERSION_PROPERTY = "lakecompact.base_version"
MARKER_BUCKET = -1


@dataclass
class CompactReport:
    table: str
    version: int
    events_in: int = 0
    rows_out: int = 0
    live_rows: int = 0
    buckets_rewritten: int = 0
    bucket_count: int = 0


def bucket_expression(schema: TableSchema, bucket_count: int) -> str:
    keys = ", ".join(f"`{k}`" for k in schema.key)
    return f"pmod(xxhash64({keys}), {bucket_count})"


class Compactor:
    def __init__(self, spark: SparkSession, config: Config, table: str):
        self.spark, self.config = spark, config
        self.catalog = Catalog(spark, config)
        self.storage = self.catalog.storage
        self.schema = self.catalog.require(table)
        self.table = table
        self.settings = config.table(table)
        self.paths: TablePaths = self.catalog.paths(table)
        self.manifests = Manifests(self.storage, f"{self.paths.state}/manifests")
        self.base_table = f"{table}_base"
        self.increments_table = f"{table}_increments"

    def lock(self):
        return exclusive_lock(self.storage, f"{self.paths.state}/compact.lock", f"table {self.table} is being compacted")

    # -- recovery --------------------------------------------------------------------------------
    def converge(self) -> Manifest:
        """Make the metastore match the highest manifest and finish archiving what it consumed."""
        manifest = self.manifests.latest(self._bucket_count())
        current = int(self.catalog.properties(self.base_table).get(VERSION_PROPERTY, "0"))
        if current != manifest.version:
            say(f"  {self.table}: metastore at base v{current}, manifests at v{manifest.version}: finishing the swap")
            self._point_base_at(manifest)
        self._publish_changes(manifest.version)
        self._archive(manifest.consumed)
        self._collect_garbage(manifest)
        return manifest

    def _bucket_count(self) -> int:
        return 0 if self.schema.keyless else self.settings.buckets

    # -- compaction ------------------------------------------------------------------------------
    def compact(self) -> CompactReport | None:
        started = time.monotonic()
        with self.lock():
            current = self.converge()
            pending = self._pending()
            if not pending:
                say(f"compact {self.table}: nothing pending (base v{current.version}) in {seconds_since(started)}")
                return None
            version = current.version + 1
            increments = self.spark.table(f"`{self.config.database}`.`{self.increments_table}`").where(
                F.col("__batch").isin([b for _, b in pending])
            )
            report = self._write_version(current, version, increments, pending)
            self._point_base_at(self.manifests.read(version))
            self._publish_changes(version)
            self._archive(tuple(pending))
            self._collect_garbage(self.manifests.read(version))
        say(
            f"compact {self.table}: base v{current.version} -> v{version}: {report.events_in} events from "
            f"{len(pending)} batch(es), {report.rows_out} rows written ({report.live_rows} live), "
            f"{report.buckets_rewritten} of {report.bucket_count} buckets rewritten, in {seconds_since(started)}"
        )
        return report

    def _pending(self) -> list[tuple[str, int]]:
        parts = self.catalog.partitions(self.increments_table)
        return sorted(((p["__hour"], int(p["__batch"])) for p in parts), key=lambda p: p[1])

    def _base_schema(self) -> StructType:
        columns = self.schema.columns + list(META_COLUMNS) + list(BASE_EXTRA)
        return StructType.fromDDL(", ".join(f"`{name}` {kind}" for name, kind in columns))

    def _read_base(self, manifest: Manifest, buckets: list[int]) -> DataFrame:
        locations = [self.paths.base_bucket(manifest.buckets[b], b) for b in buckets if b in manifest.buckets]
        if not locations:
            return self.spark.createDataFrame([], self._base_schema())
        return self.spark.read.schema(self._base_schema()).parquet(*locations)

    def _write_version(self, current: Manifest, version: int, increments: DataFrame, pending) -> CompactReport:
        keyless = self.schema.keyless
        bucket_count = current.bucket_count if current.buckets else self._bucket_count()
        if not keyless and current.buckets and bucket_count != self.settings.buckets:
            warn(f"{self.table}: has {bucket_count} buckets; buckets = {self.settings.buckets} applies to new tables only")
        bucket = F.lit(version) if keyless else F.expr(bucket_expression(self.schema, bucket_count))
        # one pass over the increments: their count, whether a truncate is among them, the buckets they touch
        # (at most bucket_count small ints reach the driver)
        summary = increments.agg(
            F.count(F.lit(1)).alias("events"),
            F.max((F.col("__op") == "t").cast("int")).alias("truncated"),
            F.collect_set(F.when(F.col("__op") != "t", bucket)).alias("buckets"),
        ).first()
        events_in, truncated = summary.events, bool(summary.truncated)
        marker = [MARKER_BUCKET] if MARKER_BUCKET in current.buckets else []
        if keyless:
            # an event delivered again must be found in any chunk; new rows go to a chunk of their own
            touched = sorted(current.buckets)
            target = {b: version for b in ([version] + [MARKER_BUCKET] if truncated else [version])}
        else:
            if truncated:
                touched = list(range(bucket_count)) + marker
            else:
                touched = sorted(summary.buckets) + marker
            target = {b: version for b in touched if b != MARKER_BUCKET}
            if truncated:
                target[MARKER_BUCKET] = version
        base = self._read_base(current, touched)
        query = semantics_sql(
            self.schema, base="{base}", increments="{increments}", live_only=False,
            new_rows_only=keyless and not truncated,
        )
        rows = self.spark.sql(query, base=base, increments=increments)
        if not truncated:  # the truncate marker's bucket is rewritten only for a new truncate
            rows = rows.where(F.col("__op") != "t")
        # the truncate marker lives in a bucket of its own, read by every compaction and by the view
        rows = rows.withColumn("__bucket", F.when(F.col("__op") == "t", F.lit(MARKER_BUCKET)).otherwise(bucket))
        rows = self._purge_tombstones(rows)
        location = self.paths.base_version(version)
        self.storage.delete(location)  # a half-written attempt of this version is garbage
        rows.repartition(max(len(target), 1), "__bucket").write.partitionBy("__bucket").parquet(location)
        for b in target:
            self.storage.mkdirs(self.paths.base_bucket(version, b))
        written = self._read_base_version(location)
        counts = written.agg(F.count(F.lit(1)).alias("rows"), F.count(F.when(~F.col("__deleted"), 1)).alias("live")).first()
        rows_out, live_rows = counts.rows, counts.live
        self._write_changes(version, before=base, after=written, increments=increments)
        buckets = {} if keyless and truncated else dict(current.buckets)
        buckets.update(target)
        manifest = Manifest(
            version,
            buckets,
            bucket_count,
            tuple(pending),
            {
                "events_in": events_in,
                "rows_written": rows_out,
                "buckets_rewritten": sorted(target),
                "created_at": datetime.now(UTC).isoformat(),
            },
        )
        self.manifests.write(manifest)
        data_buckets = [b for b in buckets if b != MARKER_BUCKET]
        rewritten = [b for b in target if b != MARKER_BUCKET]
        return CompactReport(self.table, version, events_in, rows_out, live_rows, len(rewritten), max(bucket_count, len(data_buckets)))

    def _read_base_version(self, location: str) -> DataFrame:
        return self.spark.read.schema(self._base_schema()).parquet(location)

    def _write_changes(self, version: int, *, before: DataFrame, after: DataFrame, increments: DataFrame) -> None:
        """Staged beside the feed; published (one rename) only once the version is committed."""
        staging = self.paths.changes_staging(version)
        self.storage.delete(staging)
        if self.settings.change_feed == "off":
            return
        frame = changes.feed(
            self.spark, self.schema, self.settings.change_feed, before=before, after=after,
            increments=increments, committed_at=datetime.now(UTC).isoformat(),
        )
        frame.coalesce(1).write.parquet(staging)

    def _publish_changes(self, version: int) -> None:
        staging, final = self.paths.changes_staging(version), self.paths.changes(version)
        if self.storage.exists(staging):
            self.storage.delete(final)
            self.storage.rename(staging, final)
        if self.storage.exists(final):
            self.catalog.add_partitions(f"{self.table}_changes", [([("__version", version)], final)])
            self.catalog.refresh(f"{self.table}_changes")

    def _purge_tombstones(self, rows: DataFrame) -> DataFrame:
        if self.settings.delete_mode != "hard":
            return rows
        cutoff = datetime.now(UTC) - timedelta(hours=self.settings.tombstone_retention_hours)
        expired = F.col("__deleted") & F.coalesce(F.col("__landed_at") < F.lit(cutoff), F.lit(False))
        return rows.where((F.col("__op") == "t") | ~expired)

    # -- the swap and what follows -------------------------------------------------------------------
    def _point_base_at(self, manifest: Manifest) -> None:
        """The commit: the `<t>_base` partitions name the manifest's folders, then the version property."""
        existing = {int(p["__bucket"]) for p in self.catalog.partitions(self.base_table)}
        wanted = manifest.buckets
        new = [([("__bucket", b)], self.paths.base_bucket(v, b)) for b, v in sorted(wanted.items()) if b not in existing]
        self.catalog.add_partitions(self.base_table, new)
        for b, v in sorted(wanted.items()):
            if b in existing:
                self.catalog.set_partition_location(self.base_table, [("__bucket", b)], self.paths.base_bucket(v, b))
        gone = [[("__bucket", b)] for b in sorted(existing - set(wanted))]
        self.catalog.drop_partitions(self.base_table, gone)
        self.catalog.set_properties(self.base_table, {VERSION_PROPERTY: str(manifest.version)})
        self.catalog.refresh(self.base_table, self.table)

    def _archive(self, consumed: tuple[tuple[str, int], ...]) -> None:
        registered = {(p["__hour"], int(p["__batch"])) for p in self.catalog.partitions(self.increments_table)}
        done = [c for c in consumed if c in registered]
        self.catalog.drop_partitions(self.increments_table, [[("__hour", h), ("__batch", b)] for h, b in done])
        for hour, batch in consumed:
            source = self.paths.increment(hour, batch)
            if self.storage.exists(source):
                self.storage.delete(self.paths.archived(hour, batch))
                self.storage.rename(source, self.paths.archived(hour, batch))
        self.catalog.refresh(self.increments_table)

    def _collect_garbage(self, current: Manifest) -> None:
        """Keep the last K versions; delete folders no kept manifest refers to, and unfinished versions."""
        versions = self.manifests.versions()
        keep = versions[-self.settings.keep_versions:]
        for old in versions[: -self.settings.keep_versions]:
            self.manifests.delete(old)
        referenced = {(v, b) for m in (self.manifests.read(k) for k in keep) for b, v in m.buckets.items()}
        self._collect_changes(set(keep) | {current.version})
        for name in self.storage.list_names(self.paths.base):
            if not name.startswith("v="):
                continue
            version = int(name[2:])
            folder = self.paths.base_version(version)
            if version > current.version:  # written by a crashed run that never wrote its manifest
                self.storage.delete(folder)
                continue
            buckets = [n for n in self.storage.list_names(folder) if n.startswith("__bucket=")]
            unreferenced = [n for n in buckets if (version, int(n[len("__bucket="):])) not in referenced]
            if len(unreferenced) == len(buckets) and version != current.version:
                self.storage.delete(folder)
                continue
            for bucket_dir in unreferenced:
                self.storage.delete(f"{folder}/{bucket_dir}")

    def _collect_changes(self, kept: set[int]) -> None:
        """The feed keeps the versions the base keeps (README: Change feed)."""
        root = f"{self.paths.root}/changes"
        for name in self.storage.list_names(f"{root}/_staging"):
            if name.startswith("v=") and int(name[2:]) not in kept:
                self.storage.delete(f"{root}/_staging/{name}")
        dropped = []
        for name in self.storage.list_names(root):
            if name.startswith("v=") and int(name[2:]) not in kept:
                dropped.append(int(name[2:]))
                self.storage.delete(f"{root}/{name}")
        self.catalog.drop_partitions(f"{self.table}_changes", [[("__version", v)] for v in dropped])

    # -- rollback --------------------------------------------------------------------------------
    def rollback(self) -> int:
        """Back one version: its increments become pending again, then the base points at the version before."""
        started = time.monotonic()
        with self.lock():
            current = self.converge()
            earlier = [v for v in self.manifests.versions() if v < current.version]
            if earlier:
                previous = self.manifests.read(earlier[-1])
            elif current.version == 1:
                previous = Manifest(0, {}, current.bucket_count)
            else:
                raise RollbackError(
                    f"table {self.table} is at base v{current.version} with no earlier version kept "
                    f"(keep_versions = {self.settings.keep_versions})"
                )
            restored = []
            for hour, batch in current.consumed:
                archived = self.paths.archived(hour, batch)
                if self.storage.exists(archived):
                    self.storage.rename(archived, self.paths.increment(hour, batch))
                restored.append(([("__hour", hour), ("__batch", batch)], self.paths.increment(hour, batch)))
            self.catalog.add_partitions(self.increments_table, restored)
            self.manifests.retire(current.version)
            self._point_base_at(previous)
            self.catalog.drop_partitions(f"{self.table}_changes", [[("__version", current.version)]])
            self.storage.delete(self.paths.changes(current.version))
            self.storage.delete(self.paths.base_version(current.version))
        say(
            f"rollback {self.table}: base v{current.version} -> v{previous.version}; {len(restored)} batch(es) "
            f"pending again, in {seconds_since(started)}"
        )
        return previous.version


def compact(spark: SparkSession, config: Config, tables: list[str] | None = None) -> list[CompactReport]:
    catalog = Catalog(spark, config)
    names = tables or catalog.tables()
    reports = []
    for name in names:
        report = Compactor(spark, config, name).compact()
        if report:
            reports.append(report)
    if not names:
        say("compact: no tables yet; run `lakecompact land` first")
    return reports


def rollback(spark: SparkSession, config: Config, table: str) -> int:
    return Compactor(spark, config, table).rollback()
