"""A table's folders on a local warehouse, read as the commit protocols define them (docs/design.md "Commit
protocols"): consumed increments stay where they were landed, archived by a manifest that folded them in."""

from __future__ import annotations

import json
from pathlib import Path


def consumed_batches(table: Path) -> set[int]:
    """The batches some committed version folded in: the kept manifests' and the expired ones' (not those of a
    version rolled back)."""
    manifests = table / "_state" / "manifests"
    files = [*manifests.glob("*.json"), *(manifests / "expired").glob("*.json")]
    return {int(batch) for path in files for _, batch in json.loads(path.read_text())["consumed"]}


def batch_folders(table: Path) -> list[str]:
    """The `batch=N` names of the table's increment folders, in batch order."""
    names = [d.name for d in (table / "increments").glob("hour=*/batch=*")]
    return sorted(names, key=lambda name: int(name.split("=")[1]))


def archived_batches(table: Path) -> list[int]:
    """The batches whose folders a committed version folded in, in order."""
    consumed = consumed_batches(table)
    return [n for n in (int(name.split("=")[1]) for name in batch_folders(table)) if n in consumed]


def unconsumed_batches(table: Path) -> list[str]:
    """The `batch=N` folders no committed version folded in (pending, or a crashed land's)."""
    consumed = consumed_batches(table)
    return [name for name in batch_folders(table) if int(name.split("=")[1]) not in consumed]
