"""The swap: the commit of a base version in the metastore (docs/design.md "Compaction protocol"). The `<t>_base`
partitions are pointed at the manifest's folders, then the table's version property names the version."""

from __future__ import annotations

from lakecompact.lake.catalog import VERSION_PROPERTY, Catalog
from lakecompact.lake.manifest import Manifest
from lakecompact.lake.paths import TablePaths
from lakecompact.lake.row_history import EVENTS_PARTITION


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
    unchanged = pointed_at.buckets if pointed_at is not None else {}
    _repoint(catalog, base_table, "__bucket", existing,
             {b: paths.base_bucket(v, b) for b, v in manifest.buckets.items()},
             {b: paths.base_bucket(v, b) for b, v in unchanged.items()})
    catalog.set_properties(base_table, {VERSION_PROPERTY: str(manifest.version)})
    catalog.refresh(base_table)


def point_events_at(catalog: Catalog, events_table: str, paths: TablePaths, manifest: Manifest) -> None:
    """`row_history`: the `<t>_events` partitions name the manifest's event folders (none: no history kept). Before
    the base's swap, so that a crash between the two is finished by the base's recovery, which does both."""
    existing = {int(p[EVENTS_PARTITION[0]]) for p in catalog.partitions(events_table)}
    _repoint(catalog, events_table, EVENTS_PARTITION[0], existing,
             {p: paths.events(v) for p, v in (manifest.events or {}).items()}, {})
    catalog.refresh(events_table)


def _repoint(catalog: Catalog, table: str, column: str, existing: set[int], wanted: dict[int, str],
             unchanged: dict[int, str]) -> None:
    """Partitions `wanted` (number -> folder) added, moved or kept as they are (`unchanged`: where they are known to
    point already), and the others of `existing` dropped."""
    new = [([(column, n)], location) for n, location in sorted(wanted.items()) if n not in existing]
    catalog.add_partitions(table, new)
    moved = [([(column, n)], location) for n, location in sorted(wanted.items())
             if n in existing and unchanged.get(n) != location]
    catalog.set_partition_locations(table, moved)
    catalog.drop_partitions(table, [[(column, n)] for n in sorted(existing - set(wanted))])
