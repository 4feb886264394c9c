"""The swap: the commit of a base version in the metastore (docs/design.md "Compaction protocol"). The `<t>_base`
partitions are pointed at the manifest's folders, then the table's version property names the version."""

from __future__ import annotations

from lakecompact.catalog import VERSION_PROPERTY, Catalog, TablePaths
from lakecompact.compaction.manifest import Manifest


def point_base_at(
    catalog: Catalog, base_table: str, paths: TablePaths, manifest: Manifest, pointed_at: Manifest | None = None
) -> None:
    """The `<t>_base` partitions name the manifest's folders, then the version property.

    `pointed_at`: the manifest the metastore is known to match (converged): its buckets are the partitions
    there, and a bucket the new version did not rewrite keeps its partition untouched; without it (recovery,
    rollback) the partitions are listed first and every one is set.
    """
    if pointed_at is not None:
        existing = set(pointed_at.buckets)
    else:
        existing = {int(p["__bucket"]) for p in catalog.partitions(base_table)}
    wanted = manifest.buckets
    new = [([("__bucket", b)], paths.base_bucket(v, b)) for b, v in sorted(wanted.items()) if b not in existing]
    catalog.add_partitions(base_table, new)
    unchanged = pointed_at.buckets if pointed_at is not None else {}
    moved = [
        ([("__bucket", b)], paths.base_bucket(v, b))
        for b, v in sorted(wanted.items()) if b in existing and unchanged.get(b) != v
    ]
    catalog.set_partition_locations(base_table, moved)
    gone = [[("__bucket", b)] for b in sorted(existing - set(wanted))]
    catalog.drop_partitions(base_table, gone)
    catalog.set_properties(base_table, {VERSION_PROPERTY: str(manifest.version)})
    catalog.refresh(base_table)
