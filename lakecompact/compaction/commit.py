"""The commit half of a table's compaction, which rollback shares: the table's compaction lock, recovery (converge),
the swap, publishing a version's change feed, the archive of consumed increments, garbage collection and
`finished.json` (docs/design.md "Compaction protocol", "Rollback protocol"). Planning and writing a version is
compact.py's; the callers keep the order of the steps and their crash points."""

from __future__ import annotations

from contextlib import AbstractContextManager

from lakecompact.compaction import archive, garbage, swap
from lakecompact.config import Config
from lakecompact.identifiers import qualified
from lakecompact.lake.catalog import VERSION_PROPERTY, Catalog
from lakecompact.lake.manifest import Manifest, Manifests
from lakecompact.lake.model import CHANGE_PARTITION, TableSchema
from lakecompact.lake.partitions import is_delta
from lakecompact.lake.paths import TablePaths
from lakecompact.lake.storage import exclusive_lock, is_object_store
from lakecompact.lake.view_definition import refresh_view_as_saved
from lakecompact.naming import base_table, changes_table, events_table, increments_table
from lakecompact.report import say

__all__ = ["TableCommit", "feed_staging"]


def feed_staging(paths: TablePaths, version: int) -> str:
    """Where a version's feed is written: beside the feed, to appear in it whole by one folder rename for the
    streams that tail its folder; on an object store, where a folder's rename copies every object, in place,
    where only the partition of `<t>_changes` (added once the version is committed) publishes it."""
    if is_object_store(paths.root):
        return paths.changes(version)
    return paths.changes_staging(version)


class TableCommit:
    """The commit steps of one table's versions; `bucket_count`: a keyed table's buckets (keyless: 0), for the
    version 0 a table without manifests is at."""

    def __init__(self, catalog: Catalog, config: Config, table: str, bucket_count: int):
        self.catalog, self.config, self.table = catalog, config, table
        self.storage = catalog.storage
        self.settings = config.table(table)
        self.paths: TablePaths = catalog.paths(table)
        self.manifests = Manifests(self.storage, self.paths.manifests)
        self.bucket_count = bucket_count
        self.base_table = base_table(table)
        self.increments_table = increments_table(table)
        self.changes_table = changes_table(table)
        self.events_table = events_table(table)

    @classmethod
    def of_table(cls, catalog: Catalog, config: Config, table: str, schema: TableSchema) -> TableCommit:
        """The commit steps of `table`, whose schema is `schema`."""
        return cls(catalog, config, table, 0 if schema.keyless else config.table(table).buckets)

    def lock(self) -> AbstractContextManager[None]:
        return exclusive_lock(self.storage, self.paths.compaction_lock, f"table {self.table} is being compacted",
                              lease_seconds=self.config.locks.lease_seconds)

    def converge(self) -> Manifest:
        """Make the metastore match the highest manifest and finish archiving what it consumed."""
        manifest = self.manifests.latest(self.bucket_count)
        current = int(self.catalog.properties(self.base_table).get(VERSION_PROPERTY, "0"))
        if current == manifest.version and self.finished_version() == manifest.version:
            return manifest  # nothing to finish: saves the metastore round trips below on every compaction
        if current != manifest.version:
            say(f"  {self.table}: metastore at base v{current}, manifests at v{manifest.version}: finishing the swap")
            self.point_base_at(manifest)
        self.publish_changes(manifest.version)
        self.archive(manifest.consumed)
        self.collect_garbage(manifest)
        self.mark_finished(manifest.version)
        return manifest

    def point_base_at(self, manifest: Manifest, pointed_at: Manifest | None = None) -> None:
        """The swap (swap.py); `pointed_at`: the manifest the metastore is known to match."""
        if any(is_delta(b) for b in manifest.buckets):
            # a view made before deltas existed would read them as rows
            refresh_view_as_saved(self.catalog, self.table)
        if manifest.events is not None or (self.settings.row_history and self.catalog.spark.catalog.tableExists(
                qualified(self.config.database, self.events_table))):
            swap.point_events_at(self.catalog, self.events_table, self.paths, manifest)
        swap.point_base_at(self.catalog, self.base_table, self.paths, manifest, pointed_at)

    def publish_changes(self, version: int) -> None:
        staging, final = feed_staging(self.paths, version), self.paths.changes(version)
        if staging != final and self.storage.exists(staging):
            self.storage.delete(final)
            self.storage.rename(staging, final)
        if self.storage.exists(final):
            self.catalog.add_partitions(self.changes_table, [([(CHANGE_PARTITION[0], version)], final)])
            self.catalog.refresh(self.changes_table)

    def archive(self, consumed: tuple[tuple[str, int], ...]) -> None:
        archive.archive(self.catalog, self.increments_table, consumed)

    def collect_garbage(self, current: Manifest) -> None:
        garbage.collect_garbage(self.catalog, self.paths, self.manifests, self.changes_table,
                                self.settings.keep_versions, current)
        garbage.collect_events(self.storage, self.paths, self.manifests, current)

    def finished_version(self) -> int | None:
        finished = self.storage.read_json_or_none(self.paths.finished)
        return finished["version"] if finished else None

    def mark_finished(self, version: int) -> None:
        self.storage.write_json(self.paths.finished, {"version": version}, overwrite=True)
