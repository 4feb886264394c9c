"""Garbage collection after a compaction: the base keeps its last `keep_versions` versions, the change feed the
same versions (docs/change-feed.md "How long versions stay"); folders no kept manifest refers to go."""

from __future__ import annotations

from lakecompact.lake.catalog import Catalog
from lakecompact.lake.manifest import Manifest, Manifests
from lakecompact.lake.model import CHANGE_PARTITION
from lakecompact.lake.paths import TablePaths


def collect_garbage(
    catalog: Catalog, paths: TablePaths, manifests: Manifests, changes_table: str, keep_versions: int, current: Manifest
) -> None:
    """Keep the last `keep_versions` versions; delete folders no kept manifest refers to, and unfinished versions."""
    storage = catalog.storage
    versions = manifests.versions()
    keep = versions[-keep_versions:]
    for old in versions[:-keep_versions]:
        manifests.expire(old)
    referenced = {(v, b) for m in (manifests.read(k) for k in keep) for b, v in m.buckets.items()}
    collect_changes(catalog, paths, changes_table, set(keep) | {current.version})
    for name in storage.list_names(paths.base):
        if not name.startswith("v="):
            continue
        version = int(name[2:])
        folder = paths.base_version(version)
        if version > current.version:  # written by a crashed run that never wrote its manifest
            storage.delete(folder)
            continue
        buckets = [n for n in storage.list_names(folder) if n.startswith("__bucket=")]
        unreferenced = [n for n in buckets if (version, int(n[len("__bucket="):])) not in referenced]
        if len(unreferenced) == len(buckets) and version != current.version:
            storage.delete(folder)
            continue
        for bucket_dir in unreferenced:
            storage.delete(f"{folder}/{bucket_dir}")


def collect_events(storage, paths: TablePaths, manifests: Manifests, current: Manifest) -> None:
    """`row_history`: event folders no kept manifest names go (a retention's rewrite replaced them, or a crashed
    run wrote them above the current version)."""
    referenced = {v for m in (manifests.read(k) for k in manifests.versions()) for v in (m.events or {}).values()}
    for name in storage.list_names(paths.events_root):
        if name.startswith("v=") and int(name[2:]) not in referenced | {current.version}:
            storage.delete(paths.events(int(name[2:])))


def collect_changes(catalog: Catalog, paths: TablePaths, changes_table: str, kept: set[int]) -> None:
    """The feed keeps the versions the base keeps (docs/change-feed.md "How long versions stay"); an expired
    version's folder goes one compaction after its partition."""
    storage = catalog.storage
    for name in storage.list_names(paths.changes_staging_root):
        if name.startswith("v=") and int(name[2:]) not in kept:
            storage.delete(paths.changes_staging(int(name[2:])))
    registered = {int(p[CHANGE_PARTITION[0]]) for p in catalog.partitions(changes_table)}
    for name in storage.list_names(paths.changes_root):
        # a version still registered keeps its folder until the next compaction: a reader that listed the
        # partition just before it is dropped below can still read its files. Not registered: dropped by an earlier
        # compaction, or above the current version (a crashed compaction's feed, written in place before its
        # manifest)
        if name.startswith("v=") and int(name[2:]) not in kept | registered:
            storage.delete(paths.changes(int(name[2:])))
    # every partition of a version not kept, also one whose folder is gone (a rollback killed in between): its
    # number is never used again, so no compaction would replace it
    catalog.drop_partitions(changes_table, [[(CHANGE_PARTITION[0], v)] for v in sorted(registered - kept)])
