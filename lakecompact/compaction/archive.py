"""The archive of consumed increments: a batch a version folded in leaves `<t>_increments` and stays where it was
landed (TablePaths.archived; docs/design.md "Compaction protocol"), which a rollback makes pending again."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lakecompact.errors import MissingFile
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.manifest import Manifest
from lakecompact.lake.paths import TablePaths
from lakecompact.lake.storage import Storage


def archive(catalog: Catalog, increments_table: str, consumed: tuple[tuple[str, int], ...]) -> None:
    """Take the consumed batches out of `<t>_increments`."""
    if not consumed:
        return
    # DROP IF EXISTS: a batch a crashed run already dropped is skipped by the metastore. The folders stay where
    # they are (TablePaths.archived)
    catalog.drop_partitions(increments_table, [[("__hour", h), ("__batch", b)] for h, b in consumed])
    catalog.refresh(increments_table)


def require_archived(storage: Storage, paths: TablePaths, table: str, current: Manifest, previous: Manifest) -> None:
    """Every batch the version folded in is still in the archive: a batch made pending again without its folder
    would be left out of every read, silently."""
    gone = first_gone(current.consumed, lambda hour, batch: not storage.exists(paths.archived(hour, batch)))
    if gone is not None:
        (hour, batch), others = gone
        raise MissingFile(
            f"rollback {table}: base v{current.version} folded in batch {batch} (hour {hour}), whose archived "
            f"folder is gone: {paths.archived(hour, batch)}{others}; at v{previous.version} its events would "
            f"be lost, so nothing was changed; restore the archived folder to roll back"
        )


def first_gone(
    batches: Iterable[tuple[str, int]], is_gone: Callable[[str, int], bool]
) -> tuple[tuple[str, int], str] | None:
    """The first (hour, batch) whose folder `is_gone`, and how many more are, as words for a message; None: none."""
    gone = [(hour, batch) for hour, batch in batches if is_gone(hour, batch)]
    if not gone:
        return None
    return gone[0], f" ({len(gone) - 1} more batch(es) likewise)" if len(gone) > 1 else ""
