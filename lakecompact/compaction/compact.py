"""`lakecompact compact` and `lakecompact rollback`: the compactor, planning and writing of a version and its change
feed; the commit half (commit.py: the lock, recovery, the swap, publishing, the archive, garbage collection) and
rollback (rollback.py) are modules of their own.

Per table, under its lock (docs/design.md "Compaction protocol"):
1. converge the metastore to the highest manifest, and archive what that version consumed (crash recovery;
   skipped when `_state/finished.json` says the last compaction finished);
2. read the pending increments and only the base buckets they touch;
3. resolve the latest state per key with the same SQL as the view, write base vN+1 for those buckets;
4. write the manifest (the version now exists), point the touched `<t>_base` partitions at vN+1;
5. publish the version's change feed, archive the consumed increments (out of `<t>_increments`, left in place);
   keep K versions and collect older folders.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructType

from lakecompact import crashpoints, sql
from lakecompact.compaction import changes
from lakecompact.compaction.archive import first_gone
from lakecompact.compaction.commit import TableCommit, feed_staging
from lakecompact.compaction.spread import bucket_spread
from lakecompact.config import Config
from lakecompact.errors import LockHeld, MissingIncrement
from lakecompact.identifiers import column_list
from lakecompact.lake import row_history
from lakecompact.lake.catalog import VERSION_PROPERTY, Catalog
from lakecompact.lake.manifest import Manifest, Manifests
from lakecompact.lake.model import (
    BASE_EXTRA,
    META_COLUMNS,
    TableSchema,
)
from lakecompact.lake.partitions import (
    DELTA_BUCKETS_FROM,
    MARKER_BUCKET,
    data_bucket_of,
    delta_of,
    is_data,
    is_delta,
    is_marker,
)
from lakecompact.lake.paths import TablePaths
from lakecompact.lake.semantics import semantics_context
from lakecompact.lake.view_definition import refresh_view_as_saved
from lakecompact.report import say, seconds_since, warn
from lakecompact.spark import write_counted

__all__ = ["VERSION_PROPERTY", "CompactReport", "Compactor", "compact"]

# the change feed's files: a small change writes one, a first compaction's feed (the whole table) is numbered and
# written in parallel
FEED_EVENTS_PER_FILE = 250_000
# a version's rows are counted per partition while written, two conditions per partition on each row, unless
# there are more of those than this: then reading the written `__deleted` column back, one small Spark job, is cheaper
COUNTED_WHILE_WRITING = 4_000_000


@dataclass(frozen=True)
class CompactReport:
    table: str
    version: int
    events_in: int = 0
    rows_out: int = 0
    live_rows: int = 0
    buckets_rewritten: int = 0
    bucket_count: int = 0
    deltas_written: int = 0


@dataclass(frozen=True, kw_only=True)
class VersionPlan:
    """What version N+1 reads and writes: the base buckets read, and the buckets (re)written."""

    bucket_count: int
    events_in: int
    truncated: bool
    touched: tuple[int, ...]  # buckets of base N that are read
    target: tuple[int, ...]  # partitions that version N+1 writes (folders v=N+1/__bucket=b; a delta: delta_of(b))
    max_source_ts_ms: int | None  # the last source change base N+1 has seen
    deltas: tuple[int, ...] = ()  # buckets that get a new delta (merge-on-read) instead of being rewritten whole
    rows_read: int = 0  # rows of base N read (as the manifest counted them)
    deltas_read: tuple[int, ...] = ()  # the partitions of base N's deltas of touched buckets (delta_of(b))

    @property
    def no_truncate(self) -> bool:
        """Neither the change nor the buckets read hold a truncate (nor its marker)."""
        return not self.truncated and MARKER_BUCKET not in self.touched


@dataclass(frozen=True)
class WrittenRows:
    per_bucket: dict[int, tuple[int, int]]  # bucket -> (rows, live rows) written to it

    @property
    def rows(self) -> int:
        return sum(rows for rows, _ in self.per_bucket.values())

    @property
    def live(self) -> int:
        return sum(live for _, live in self.per_bucket.values())


def bucket_expression(schema: TableSchema, bucket_count: int) -> Column:
    return F.expr(sql.render_checked("clauses/bucket.sql.j2", key=list(schema.key), bucket_count=bucket_count))


class Compactor:
    def __init__(self, spark: SparkSession, config: Config, table: str):
        self.spark, self.config = spark, config
        self.catalog = Catalog(spark, config)
        self.storage = self.catalog.storage
        self.schema = self.catalog.require(table)
        self.table = table
        self.settings = config.table(table)
        self.commit = TableCommit.of_table(self.catalog, config, table, self.schema)
        self.paths: TablePaths = self.commit.paths
        self.manifests: Manifests = self.commit.manifests
        self.increments_table = self.commit.increments_table

    # -- compaction ------------------------------------------------------------------------------
    def compact(self) -> CompactReport | None:
        started = time.monotonic()
        with self.commit.lock():
            current = self.commit.converge()
            pending = self._pending(current)
            if not pending:
                say(f"compact {self.table}: nothing pending (base v{current.version}) in {seconds_since(started)}")
                return None
            # a land (under its own lock) may have added columns since this compactor started: it saves the
            # schema before it registers a batch, so the schema read after the listing has every pending column
            self.schema = self.catalog.require(self.table)
            if self.settings.row_history:
                row_history.require_keyed(self.schema)
                refresh_view_as_saved(self.catalog, self.table)  # `<t>_events` and `<t>_history`, when new
            version = self.manifests.next_version(current)
            increments = self._read_increments(pending)
            report = self._write_version(current, version, increments, pending, started)
            written = self.manifests.read(version)
            self.commit.point_base_at(written, current)
            crashpoints.reached("swap")
            self.commit.publish_changes(version)
            crashpoints.reached("changes-published")
            self.commit.archive(tuple(pending))
            crashpoints.reached("archive")
            self.commit.collect_garbage(written)
            crashpoints.reached("garbage-collected")
            self.commit.mark_finished(version)
        say(
            f"compact {self.table}: base v{current.version} -> v{version}: {report.events_in} events from "
            f"{len(pending)} batch(es), {report.rows_out} rows written ({report.live_rows} live), "
            f"{report.buckets_rewritten} of {report.bucket_count} buckets rewritten"
            f"{f', {report.deltas_written} with a new delta' if report.deltas_written else ''}, in {seconds_since(started)}"
        )
        return report

    def _pending(self, current: Manifest) -> list[tuple[str, int]]:
        """The registered increments not yet in the base.

        A landing rerun writes an interrupted batch again; when this table's part of it was already folded
        into the current version, the copy is archived here instead of being folded in twice.
        """
        parts = self.catalog.partitions(self.increments_table)
        registered = sorted(((p["__hour"], int(p["__batch"])) for p in parts), key=lambda p: p[1])
        folded = {batch for _, batch in current.consumed}
        relanded = tuple(p for p in registered if p[1] in folded)
        if relanded:
            say(f"  {self.table}: batch(es) {', '.join(str(b) for _, b in relanded)} landed again after "
                f"base v{current.version} folded them in: archived, not folded twice")
            self.commit.archive(relanded)
        return [p for p in registered if p[1] not in folded]

    def _base_schema(self) -> StructType:
        return StructType.fromDDL(column_list(self.schema.columns + list(META_COLUMNS) + list(BASE_EXTRA)))

    def _read_increments(self, pending: list[tuple[str, int]]) -> DataFrame:
        """The pending increments with the columns the semantic queries read (data, meta and `__batch`), in
        one scan of their folders (a registered increment is at `paths.increment(hour, batch)`). The queries
        refer to the increments in up to twelve places, and each reference to `<t>_increments` would list its
        partitions in the metastore again (five calls each); one file index serves them all."""
        data_columns = self.schema.columns + list(META_COLUMNS)
        folders = [self.paths.increment(hour, batch) for hour, batch in pending]
        self._require_folders(pending)
        files = self.spark.read.schema(StructType.fromDDL(column_list(data_columns))).parquet(*folders)
        file_path = files.metadataColumn("_metadata").getField("file_path")  # even if a column is named _metadata
        return files.withColumn("__batch", TablePaths.batch_of_increment_file(file_path))

    def _require_folders(self, pending: list[tuple[str, int]]) -> None:
        """Each registered increment's folder is there (one deleted outside lakecompact would fail Spark's read with
        its path alone); else what to do about it."""
        gone = first_gone(pending, lambda hour, batch: not self.storage.exists(self.paths.increment(hour, batch)))
        if gone is None:
            return
        (hour, batch), others = gone
        folder = self.paths.increment(hour, batch)
        forget = sql.render_checked("drop_partitions.sql.j2", database=self.config.database,
                                    table=self.increments_table, specs=[[("__hour", hour), ("__batch", batch)]])
        raise MissingIncrement(
            f"compact {self.table}: batch {batch} (hour {hour}) is registered in {self.config.database}."
            f"{self.increments_table} but its folder is gone: {folder}{others}; restore the folder, or forget the batch "
            f"(its events are lost) with this statement (`lakecompact sql` runs it): {' '.join(forget.split())}"
        )

    def _read_partitions(self, manifest: Manifest, partitions) -> DataFrame:
        """The rows of these partitions of a version, each in the folder its manifest names. A version folder that
        holds several of them is read as one root, its partitions chosen by `__bucket`: Spark lists a single root
        of an object store in one flat listing (a request per 1,000 files), where each partition folder would
        cost a probe and a listing of its own (docs/design.md "On object stores")."""
        by_version: dict[int, list[int]] = {}
        for p in partitions:
            if p in manifest.buckets:
                by_version.setdefault(manifest.buckets[p], []).append(p)
        schema = self._base_schema()
        if not by_version:
            # known empty (a filter that is always false): the optimizer drops the joins with it
            return self.spark.createDataFrame([], schema).where(F.lit(False))
        alone = [self.paths.base_bucket(v, ps[0]) for v, ps in sorted(by_version.items()) if len(ps) == 1]
        frames = [self.spark.read.schema(schema).parquet(*alone)] if alone else []
        for version, shared in sorted(by_version.items()):
            if len(shared) > 1:
                rows = self.spark.read.schema(self._base_schema().add("__bucket", IntegerType()))
                rows = rows.parquet(self.paths.base_version(version)).where(F.col("__bucket").isin(shared))
                frames.append(rows.select(*schema.fieldNames()))
        return functools.reduce(DataFrame.unionByName, frames)

    def _touched_keys(self, increments: DataFrame) -> DataFrame:
        """The keys the increments name, found once for the queries that read them (the shadowed rows, the
        version, the change feed: each would scan and group the increments again), kept as a local checkpoint
        that the first of them fills."""
        keys = sql.query(self.spark, "touched_keys.sql.j2", {"events": "{events}", "key": list(self.schema.key)},
                         events=increments)
        return keys.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)

    def _read_base(
        self, current: Manifest, plan: VersionPlan, touched: DataFrame | None
    ) -> tuple[DataFrame, DataFrame | None]:
        """Base N's rows that version N+1 reads, and (merge-on-read) the rows its new deltas shadow.

        The buckets rewritten whole are read whole; of a bucket that gets a delta, only the rows of the keys
        the change touches (its other rows stay in their files); a delta's rows stand in for the bucket's rows
        of the same keys (docs/configuration.md "Merge-on-read"). The shadowed rows are kept in memory: the version, the change
        feed and the counts read them, while finding them scans the bucket's files."""
        whole = self._read_partitions(current, [b for b in plan.touched if b not in plan.deltas])
        if not plan.deltas_read and not plan.deltas:
            return whole, None
        key = list(self.schema.key)
        delta = self._read_partitions(current, plan.deltas_read)
        shadowed = sql.query(
            self.spark, "shadowed_rows.sql.j2", {"kept": "{kept}", "delta": "{delta}", "touched": "{touched}", "key": key},
            kept=self._read_partitions(current, plan.deltas), delta=delta, touched=touched,
        )
        if plan.deltas:
            # a checkpoint, not a cache: Spark did not substitute a cached plan with subqueries in later queries
            shadowed = shadowed.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)
        base = sql.query(
            self.spark, "base_rows.sql.j2",
            {"whole": "{whole}", "shadowed": "{shadowed}", "delta": "{delta}", "key": key, "names": self._base_schema().fieldNames()},
            whole=whole, shadowed=shadowed, delta=delta,
        )
        return base, shadowed

    def _count_shadowed(self, shadowed: DataFrame, bucket_count: int) -> dict[int, tuple[int, int]]:
        """Per bucket, the rows and live rows its new delta shadows (at most bucket_count rows reach the driver)."""
        counts = shadowed.groupBy(bucket_expression(self.schema, bucket_count).alias("bucket")).agg(
            F.count(F.lit(1)).alias("rows"), F.count(F.when(_live(), 1)).alias("live")).collect()
        return {row.bucket: (row.rows, row.live) for row in counts}

    def _bucket(self, bucket_count: int, version: int) -> Column:
        """Keyed tables: the key's hash bucket. Keyless: every version appends a chunk (bucket) of its own."""
        return F.lit(version) if self.schema.keyless else bucket_expression(self.schema, bucket_count)

    def _plan(self, current: Manifest, version: int, increments: DataFrame) -> VersionPlan:
        """One pass over the increments: their events per bucket they touch, whether a truncate is among them
        (at most bucket_count small rows reach the driver)."""
        bucket_count = current.bucket_count if current.buckets else self.commit.bucket_count
        if not self.schema.keyless and current.buckets and bucket_count != self.settings.buckets:
            warn(f"{self.table}: has {bucket_count} buckets; buckets = {self.settings.buckets} applies to new tables only")
        summary = increments.groupBy(F.when(F.col("__op") != "t", self._bucket(bucket_count, version)).alias("bucket")).agg(
            F.count(F.lit(1)).alias("events"),
            F.max((F.col("__op") == "t").cast("int")).alias("truncated"),
            F.max("__source_ts_ms").alias("max_source_ts_ms"),
        ).collect()
        events = {row.bucket: row.events for row in summary if row.bucket is not None}
        truncated = any(row.truncated for row in summary)
        marker = (MARKER_BUCKET,) if MARKER_BUCKET in current.buckets else ()
        deltas: tuple[int, ...] = ()
        if self.schema.keyless:
            # an event delivered again must be found in any chunk; new rows go to a chunk of their own
            touched = tuple(sorted(current.buckets))
            target = (version, MARKER_BUCKET) if truncated else (version,)
        else:
            touched = tuple(range(bucket_count) if truncated else sorted(events)) + marker
            deltas = () if truncated else self._delta_buckets(current, events)
            target = tuple(delta_of(b) if b in deltas else b for b in touched if not is_marker(b))
            target += (MARKER_BUCKET,) if truncated else ()
        seen = [current.stats.get("max_source_ts_ms"), *(row.max_source_ts_ms for row in summary)]
        counted = current.stats.get("bucket_rows", {})
        read = [counted[str(b)] if b in current.buckets else (0, 0) for b in touched if b not in deltas]
        return VersionPlan(
            bucket_count=bucket_count,
            events_in=sum(row.events for row in summary),
            truncated=truncated,
            touched=touched,
            target=target,
            max_source_ts_ms=max((t for t in seen if t is not None), default=None),
            deltas=deltas,
            rows_read=sum(rows for rows, _ in read),
            deltas_read=tuple(d for d in (delta_of(b) for b in touched) if d in current.buckets),
        )

    def _delta_buckets(self, current: Manifest, events: dict[int, int]) -> tuple[int, ...]:
        """Merge-on-read: the touched buckets whose delta, grown by this change's events, stays within `delta_share`
        of the bucket's own rows (as the manifest counted them; a bucket new to the table is written whole). Hard
        deletes rewrite whole: a tombstone purged from a delta would let the bucket's older row show again."""
        if not self.settings.merge_on_read or self.settings.delete_mode == "hard":
            return ()
        counted, share = current.stats.get("bucket_rows", {}), self.settings.delta_share

        def fits(bucket: int) -> bool:
            if bucket not in current.buckets:
                return False
            delta = counted[str(delta_of(bucket))] if delta_of(bucket) in current.buckets else [0, 0]
            return delta[0] + events[bucket] <= share * counted[str(bucket)][0]

        return tuple(b for b in sorted(events) if fits(b))

    def _version_rows(
        self, plan: VersionPlan, version: int, base: DataFrame, increments: DataFrame, touched: DataFrame | None,
    ) -> tuple[DataFrame, DataFrame | None]:
        """The rows to write, and the rows of the keys the change touches with their `__before` for the net feed
        (a keyed table's change without a truncate, soft deletes: every touched key's row is written), kept as a
        local checkpoint that the write fills; None: the feed pairs the base before and after itself. Not when
        the base read is empty (a first compaction: its feed, inserts only, is the version as written, and the
        whole table would be held)."""
        resolves_feed = (not self.schema.keyless and plan.no_truncate and self.settings.change_feed == "net"
                         and self.settings.delete_mode == "soft" and (bool(plan.deltas) or plan.rows_read != 0))
        if not resolves_feed:
            return self._latest_rows(plan, version, base, increments, touched, "all"), None
        resolved = self._latest_rows(plan, version, base, increments, touched, "resolved", with_before=True)
        resolved = resolved.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)
        rows = resolved.drop("__before")
        # the rows of the keys no event touched: of a bucket rewritten whole, or of a delta written again (the
        # bucket's own rows of those keys stay in its files)
        if plan.deltas_read or any(b not in plan.deltas for b in plan.touched):
            rows = rows.unionByName(self._latest_rows(plan, version, base, increments, touched, "carried"))
        return rows, resolved

    def _latest_rows(
        self, plan: VersionPlan, version: int, base: DataFrame, increments: DataFrame, touched: DataFrame | None,
        part: Literal["all", "resolved", "carried"], *, with_before: bool = False,
    ) -> DataFrame:
        """Base N+1's rows of the target buckets, with their `__bucket`, in partitions that each hold few
        buckets, so that a bucket gets few files, without shuffling the whole base: the carried base rows stay
        in the scan's partitions (a scan task reads whole files, so a bucket gets one file per task that read
        its files: one, unless its files outgrow a split); only the rows of the keys the change touches are
        shuffled to their bucket (one file each), resolved where they meet (without a truncate; with one, they
        meet by key and the resolved rows are shuffled to their bucket). `part`: version_rows.sql.j2."""
        keyless = self.schema.keyless
        context = semantics_context(
            self.schema, base="{base}", increments="{increments}", live_only=False,
            new_rows_only=keyless and not plan.truncated, mark_carried=not keyless,
            no_truncate=plan.no_truncate, touched_keys=None if touched is None else "{touched}", with_before=with_before,
        )
        query = sql.render_checked(
            "version_rows.sql.j2", **context,
            bucket_count=plan.bucket_count, chunk=version if keyless else None, marker_bucket=MARKER_BUCKET,
            truncated=plan.truncated, tombstone_cutoff=self._tombstone_cutoff(), partitions=max(len(plan.target), 1),
            written=[*self._base_schema().fieldNames(), "__bucket"], deltas=plan.deltas, delta_offset=DELTA_BUCKETS_FROM,
            spread=bucket_spread(plan.bucket_count, plan.target, DELTA_BUCKETS_FROM) if not keyless else [], part=part,
        )
        return self.spark.sql(query, base=base, increments=increments, **({} if touched is None else {"touched": touched}))

    def _write_rows(self, rows: DataFrame, plan: VersionPlan, version: int) -> WrittenRows:
        """Write the version's folders; each bucket's rows and live rows counted while written, or, for a version of
        many rows into many partitions, read back (COUNTED_WHILE_WRITING)."""
        location = self.paths.base_version(version)
        self.storage.delete(location)  # a half-written attempt of this version is garbage
        live, counts = _live(), {}
        for n, b in enumerate(plan.target):
            in_bucket = F.col("__bucket") == b
            counts |= {f"rows{n}": F.count(F.when(in_bucket, 1)), f"live{n}": F.count(F.when(in_bucket & live, 1))}
        metrics = write_counted(
            rows,
            lambda frame: frame.write.partitionBy("__bucket").parquet(location),
            # read back when the optimizer proved the rows empty too (then there is no __bucket folder to find)
            lambda: self.spark.read.schema(self._base_schema().add("__bucket", IntegerType())).parquet(location),
            observe=(plan.rows_read + plan.events_in) * len(plan.target) <= COUNTED_WHILE_WRITING,
            **counts,
        )
        written = WrittenRows({b: (metrics[f"rows{n}"], metrics[f"live{n}"]) for n, b in enumerate(plan.target)})
        for b in plan.target:
            if not written.per_bucket[b][0]:  # no file in it, so no folder yet: its partition needs one
                self.storage.mkdirs(self.paths.base_bucket(version, b))
        return written

    def _write_version(
        self, current: Manifest, version: int, increments: DataFrame, pending, started: float
    ) -> CompactReport:
        plan = self._plan(current, version, increments)
        # with nothing read from the base (a first compaction), no query has base rows to match with the keys
        base_read_empty = plan.rows_read == 0 and not plan.deltas and not plan.deltas_read
        touched = None if self.schema.keyless or base_read_empty else self._touched_keys(increments)
        base, shadowed = self._read_base(current, plan, touched)
        resolved = None
        try:
            newly_shadowed = self._count_shadowed(shadowed, plan.bucket_count) if plan.deltas else {}  # fills the cache
            rows, resolved = self._version_rows(plan, version, base, increments, touched)
            written = self._write_rows(rows, plan, version)
            crashpoints.reached("version-written")
            after = None if resolved is not None else (
                self.spark.read.schema(self._base_schema()).parquet(self.paths.base_version(version)))
            self._write_changes(version, before=base, after=after, increments=increments, touched=touched,
                                truncated=plan.truncated, events=plan.events_in, resolved=resolved)
            events, history_counts = self._write_events(current, version, increments, plan)
        finally:
            for kept in (shadowed if plan.deltas else None, touched, resolved):
                if kept is not None:
                    _release_checkpoint(kept)
        buckets = {} if self.schema.keyless and plan.truncated else dict(current.buckets)
        buckets.update({b: version for b in plan.target})
        for b in plan.target:
            if is_data(b):
                buckets.pop(delta_of(b), None)  # rewritten whole: its delta is folded in
        self.manifests.write(Manifest(
            version,
            buckets,
            plan.bucket_count,
            tuple(pending),
            {
                "events_in": plan.events_in,
                "rows_written": written.rows,
                "buckets_rewritten": sorted(b for b in plan.target if not is_delta(b)),  # the marker too
                "deltas_written": list(plan.deltas),
                "created_at": datetime.now(UTC).isoformat(),
                "seconds": round(time.monotonic() - started, 1),
                "max_source_ts_ms": plan.max_source_ts_ms,  # the last source change this version has seen
                **_row_counts(current, buckets, written, newly_shadowed),
                **history_counts,
            },
            current.version,
            events,
        ))
        crashpoints.reached("manifest")
        data_buckets = [b for b in buckets if is_data(b)]
        rewritten = [b for b in plan.target if is_data(b)]
        return CompactReport(
            self.table, version, plan.events_in, written.rows, written.live, len(rewritten),
            max(plan.bucket_count, len(data_buckets)), len(plan.deltas),
        )

    def _write_changes(
        self, version: int, *, before: DataFrame, after: DataFrame | None, increments: DataFrame,
        touched: DataFrame | None, truncated: bool, events: int, resolved: DataFrame | None,
    ) -> None:
        """Written before the version's manifest, published after it. One file per FEED_EVENTS_PER_FILE events
        applied (as many changes at most, bar a truncate's deletes)."""
        staging = feed_staging(self.paths, version)
        self.storage.delete(staging)
        if self.settings.change_feed == "off":
            return
        frame = changes.feed(
            self.spark, self.schema, self.settings.change_feed, before=before, after=after,
            increments=increments, touched=touched, truncated=truncated, committed_at=datetime.now(UTC).isoformat(),
            files=max(1, -(-events // FEED_EVENTS_PER_FILE)), resolved=resolved,
        )
        frame.write.parquet(staging)

    def _write_events(self, current: Manifest, version: int, increments: DataFrame,
                      plan: VersionPlan) -> tuple[dict[int, int] | None, dict[str, Any]]:
        """`row_history`: the version's events, written before its manifest to `events/v=N+1` (a half-written
        attempt's folder deleted first), the `<t>_events` partitions the manifest names (None: history off), and
        the manifest's counts of what the partitions hold (`history_events`; `history_rows`, the versions of
        `<t>_history` they give; `history_from_ms`, the source time the oldest of those began). The first version
        that keeps history starts it from base N's rows (each a version from its own change's time: bucket and
        delta rows alike, the older is ended by the newer); `row_history_days` rewrites the kept events into this
        version's folder alone, without the versions that ended before the cutoff."""
        if not self.settings.row_history:
            return None, {}
        location = self.paths.events(version)
        self.storage.delete(location)
        names = [name for name, _ in row_history.event_columns(self.schema)]
        kept = current.events or {}
        if current.events is None and current.buckets:
            seed = self._read_partitions(current, sorted(current.buckets))
            increments = increments.unionByName(seed.select(*names))
        cutoff = row_history.retention_cutoff_us(self.settings.row_history_days, plan.max_source_ts_ms)
        if cutoff is None:
            events, partitions = increments.select(*names), {**kept, version: version}
            before = current.stats if current.events is not None else {}
        else:
            query = sql.render_checked(row_history.QUERY, **row_history.history_context(
                self.schema, events="{events}", increments=None, store=True, cutoff_us=cutoff))
            events = self.spark.sql(query, events=self._read_events(kept).unionByName(increments.select(*names)))
            partitions, before = {version: version}, {}
        counts = write_counted(events, lambda frame: frame.write.parquet(location),
                               lambda: self.spark.read.parquet(location),
                               events=F.count(F.lit(1)), oldest=F.min(F.when(F.expr(row_history.BEGINS), F.col("__source_ts_ms"))))
        oldest = [t for t in (before.get("history_from_ms"), counts["oldest"]) if t is not None]
        kept_rows = before.get("history_rows") if before.get("history_events") else 0  # None: not recorded
        added = self._versions_added(location, kept if cutoff is None else {})
        return partitions, {"history_events": before.get("history_events", 0) + counts["events"],
                            "history_rows": None if kept_rows is None else kept_rows + added,
                            "history_from_ms": min(oldest, default=None)}

    def _versions_added(self, written: str, kept: dict[int, int]) -> int:
        """The rows of `<t>_history` that the events just written to `written` add to those of the kept
        partitions: their source events that begin a version, less the redeliveries of events already kept."""
        relations = {"written": self.spark.read.parquet(written), **({"kept": self._read_events(kept)} if kept else {})}
        context = {"written": "{written}", "kept": "{kept}" if kept else None, "key": list(self.schema.key),
                   "begins": row_history.BEGINS}
        return sql.query(self.spark, "history_versions_added.sql.j2", context, **relations).first()["versions"]

    def _read_events(self, partitions: dict[int, int]) -> DataFrame:
        """The kept events of `<t>_events`' partitions (partition -> version folder)."""
        schema = StructType.fromDDL(column_list(row_history.event_columns(self.schema)))
        folders = [self.paths.events(v) for v in sorted(set(partitions.values()))]
        if not folders:
            return self.spark.createDataFrame([], schema)
        return self.spark.read.schema(schema).parquet(*folders)

    def _tombstone_cutoff(self) -> str | None:
        """Hard deletes: tombstones landed before this instant are purged (None: soft deletes keep them)."""
        if self.settings.delete_mode != "hard":
            return None
        return (datetime.now(UTC) - timedelta(hours=self.settings.tombstone_retention_hours)).isoformat()


def _row_counts(
    current: Manifest, buckets: dict[int, int], written: WrittenRows, newly_shadowed: dict[int, tuple[int, int]]
) -> dict:
    """Rows and live rows of the whole version, from each partition's counts: the rewritten ones' as written,
    the others' as their manifest recorded them, less the bucket rows that deltas shadow (those so far, and
    `newly_shadowed` by this version's deltas)."""
    known = {int(b): counts for b, counts in current.stats.get("bucket_rows", {}).items()}
    per_bucket = {b: written.per_bucket[b] if b in written.per_bucket else known[b] for b in buckets}
    earlier = {int(b): counts for b, counts in current.stats.get("shadowed_rows", {}).items()}
    shadowed = {}
    for b in (data_bucket_of(d) for d in buckets if is_delta(d)):
        before = earlier[b] if delta_of(b) in current.buckets else (0, 0)
        now = newly_shadowed.get(b, (0, 0))
        shadowed[b] = (before[0] + now[0], before[1] + now[1])
    return {
        "bucket_rows": {str(b): list(counts) for b, counts in sorted(per_bucket.items())},
        "shadowed_rows": {str(b): list(counts) for b, counts in sorted(shadowed.items())},
        "rows": sum(c[0] for c in per_bucket.values()) - sum(c[0] for c in shadowed.values()),
        "live_rows": sum(c[1] for c in per_bucket.values()) - sum(c[1] for c in shadowed.values()),
    }


def _release_checkpoint(frame: DataFrame) -> None:
    """Free a local checkpoint's blocks now rather than when the JVM collects the RDD."""
    frame._jdf.queryExecution().logical().rdd().unpersist(False)


def _live() -> Column:
    return ~F.col("__deleted") & (F.col("__op") != "t")  # the truncate marker is no row of the table


def compact(
    spark: SparkSession, config: Config, tables: list[str] | None = None, *, skip_busy: bool = False
) -> list[CompactReport]:
    """Compact the tables (default: all); `skip_busy`: a table another compactor holds is skipped, saying so."""
    catalog = Catalog(spark, config)
    names = tables or catalog.tables()
    reports = []
    for name in names:
        try:
            report = Compactor(spark, config, name).compact()
        except LockHeld as busy:
            if not skip_busy:
                raise
            say(f"compact {name}: skipped, {busy}")
            continue
        if report:
            reports.append(report)
    if not names:
        say("compact: no tables yet; run `lakecompact land` first")
    return reports
