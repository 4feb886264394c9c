"""`lakecompact rollback`: back one base version at a time (docs/design.md "Rollback protocol"). The version's
increments become pending again, then the base points at the version before; under the table's compaction lock."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession

from lakecompact.compaction.archive import require_archived
from lakecompact.compaction.commit import TableCommit
from lakecompact.config import Config
from lakecompact.errors import RollbackError
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.manifest import Manifest
from lakecompact.lake.model import CHANGE_PARTITION
from lakecompact.report import say, seconds_since


def roll_back_one(commit: TableCommit) -> int:
    """Back one version: its increments become pending again, then the base points at the version before; the
    version now."""
    started = time.monotonic()
    storage, paths, catalog = commit.storage, commit.paths, commit.catalog
    with commit.lock():
        current = commit.converge()
        earlier = [v for v in commit.manifests.versions() if v < current.version]
        if earlier:
            previous = commit.manifests.read(earlier[-1])
        elif current.previous == 0:
            previous = Manifest(0, {}, current.bucket_count)
        else:
            raise RollbackError(
                f"table {commit.table} is at base v{current.version} with no earlier version kept "
                f"(keep_versions = {commit.settings.keep_versions})"
            )
        require_archived(storage, paths, commit.table, current, previous)
        # until the manifest is retired, a crash must leave recovery to do (drop the batches from the increments
        # again), or the next compaction would take them as pending and apply them twice
        storage.delete(paths.finished)
        restored = [([("__hour", hour), ("__batch", batch)], paths.increment(hour, batch))
                    for hour, batch in current.consumed]
        catalog.add_partitions(commit.increments_table, restored)
        commit.manifests.retire(current.version)
        commit.point_base_at(previous)
        # the folder first: a feed folder on disk is a published version (a schema change registers it again)
        storage.delete(paths.changes(current.version))
        catalog.drop_partitions(commit.changes_table, [[(CHANGE_PARTITION[0], current.version)]])
        storage.delete(paths.base_version(current.version))
        storage.delete(paths.events(current.version))
    say(
        f"rollback {commit.table}: base v{current.version} -> v{previous.version}; {len(restored)} batch(es) "
        f"pending again, in {seconds_since(started)}"
    )
    return previous.version


def roll_back(commit: TableCommit, to_version: int | None = None) -> int:
    """Back one base version, or (`to_version`) back to that version, one version at a time; the version now."""
    if to_version is None:
        return roll_back_one(commit)
    kept = commit.manifests.versions()
    current = kept[-1] if kept else 0
    back_to_0 = kept and commit.manifests.read(kept[0]).previous == 0
    reachable = ([0] if back_to_0 else []) + [v for v in kept if v < current]
    if to_version != current and to_version not in reachable:
        raise RollbackError(
            f"table {commit.table} is at base v{current} and can go back to "
            f"{', '.join(f'v{v}' for v in reachable) or 'no version'} (keep_versions = "
            f"{commit.settings.keep_versions}), not v{to_version}"
        )
    while current > to_version:
        current = roll_back_one(commit)
    return current


def rollback(spark: SparkSession, config: Config, table: str, to_version: int | None = None) -> int:
    """`lakecompact rollback` of `table`: back one base version, or (`to_version`) back to that version; the version
    now."""
    catalog = Catalog(spark, config)
    return roll_back(TableCommit.of_table(catalog, config, table, catalog.require(table)), to_version)
