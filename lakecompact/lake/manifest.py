"""Base version manifests: which folder holds each bucket of a version, and what the version consumed.

A version exists only once its manifest is written (it is written last). The metastore always converges
to the highest manifest: a crash after writing one is finished forward, and a rollback removes one first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from lakecompact.lake.storage import Storage, VersionedState

EXPIRED, ROLLED_BACK = "expired", "rolled-back"  # folders beside the manifests, for `history`
_RETIRED_STAMP = "%Y%m%dT%H%M%S%f"  # a rolled-back manifest's name: <version>-<when, UTC>.json


@dataclass(frozen=True)
class Manifest:
    version: int
    buckets: dict[int, int]  # bucket -> version folder holding its files
    bucket_count: int
    consumed: tuple[tuple[str, int], ...] = ()  # (hour, batch) of the increments folded in
    stats: dict[str, Any] = field(default_factory=dict)
    previous: int = 0  # the version it was compacted from, which a rollback returns to
    # `row_history`: each partition of `<t>_events` -> the version folder holding it (None: no history kept)
    events: dict[int, int] | None = None

    @property
    def last_batch(self) -> int:
        """The highest batch this version folded in (0: none). Batches are numbered in landing order and every
        compaction folds in all that are registered, so each batch at or below it is in this version or an
        earlier one: archived (docs/design.md "Compaction protocol")."""
        return max((batch for _, batch in self.consumed), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "previous": self.previous,
            "buckets": {str(b): v for b, v in sorted(self.buckets.items())},
            "bucket_count": self.bucket_count,
            "consumed": [list(c) for c in self.consumed],
            "stats": self.stats,
            **({} if self.events is None else {"events": {str(p): v for p, v in sorted(self.events.items())}}),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Manifest:
        return cls(
            raw["version"],
            {int(b): v for b, v in raw["buckets"].items()},
            raw["bucket_count"],
            tuple((h, int(b)) for h, b in raw["consumed"]),
            raw.get("stats", {}),
            raw.get("previous", raw["version"] - 1),  # written before it was recorded: the numbers had no gaps then
            None if raw.get("events") is None else {int(p): v for p, v in raw["events"].items()},
        )


class Manifests:
    """The manifests of one table, one numbered file per version."""

    def __init__(self, storage: Storage, folder: str):
        self.storage, self.folder = storage, folder
        self._files = VersionedState(storage, folder)

    def versions(self) -> list[int]:
        return self._files.numbers()

    def read(self, version: int) -> Manifest:
        return Manifest.from_json(self._files.read(version))

    def latest(self, bucket_count: int) -> Manifest:
        versions = self.versions()
        return self.read(versions[-1]) if versions else Manifest(0, {}, bucket_count)

    def write(self, manifest: Manifest) -> None:
        self._files.write(manifest.version, manifest.to_json())

    def next_version(self, current: Manifest) -> int:
        """The number of the version compacted from `current`: one above every number the table used, a rolled-back
        version's too, so that a number once published never names other content (docs/change-feed.md). Expired
        versions are below the current one."""
        retired = self.storage.list_names(f"{self.folder}/{ROLLED_BACK}")
        return max([current.version, *(int(name[:12]) for name in retired if name.endswith(".json"))]) + 1

    def retire(self, version: int) -> None:
        """Take a version out of the chain (rollback): kept aside for `history`, never read again; its name says
        when."""
        stamp = datetime.now(UTC).strftime(_RETIRED_STAMP)
        self.storage.rename(self._files.path(version), f"{self.folder}/{ROLLED_BACK}/{version:012d}-{stamp}.json")

    def expire(self, version: int) -> None:
        """Out of the kept versions (its folders are garbage now): kept aside for `history`, never read again."""
        self.storage.rename(self._files.path(version), f"{self.folder}/{EXPIRED}/{version:012d}.json")

    def history(self) -> list[HistoryEntry]:
        """Every version this table had, oldest first, each with what became of it: "kept" (its folders are
        readable), "expired" (beyond keep_versions) or "rolled back" (with when)."""
        found = [HistoryEntry(self.read(v), "kept") for v in self.versions()]
        for folder, fate in ((EXPIRED, "expired"), (ROLLED_BACK, "rolled back")):
            for name in self.storage.list_names(f"{self.folder}/{folder}"):
                if not name.endswith(".json"):
                    continue
                manifest = Manifest.from_json(self.storage.read_json(f"{self.folder}/{folder}/{name}"))
                stamp = name.removesuffix(".json").partition("-")[2] if fate == "rolled back" else ""
                when = datetime.strptime(stamp, _RETIRED_STAMP).replace(tzinfo=UTC).isoformat() if stamp else None
                found.append(HistoryEntry(manifest, fate, when))
        return sorted(found, key=lambda entry: (entry.manifest.version, entry.manifest.stats.get("created_at", "")))


class HistoryEntry(NamedTuple):
    manifest: Manifest
    fate: str  # kept, expired or rolled back
    rolled_back_at: str | None = None  # ISO time (UTC)
