"""Base version manifests: which folder holds each bucket of a version, and what the version consumed.

A version exists only once its manifest is written (it is written last). The metastore always converges
to the highest manifest: a crash after writing one is finished forward, and a rollback removes one first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakecompact.storage import Storage, VersionedState


@dataclass(frozen=True)
class Manifest:
    version: int
    buckets: dict[int, int]  # bucket -> version folder holding its files
    bucket_count: int
    consumed: tuple[tuple[str, int], ...] = ()  # (hour, batch) of the increments folded in
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "buckets": {str(b): v for b, v in sorted(self.buckets.items())},
            "bucket_count": self.bucket_count,
            "consumed": [list(c) for c in self.consumed],
            "stats": self.stats,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Manifest:
        return cls(
            raw["version"],
            {int(b): v for b, v in raw["buckets"].items()},
            raw["bucket_count"],
            tuple((h, int(b)) for h, b in raw["consumed"]),
            raw.get("stats", {}),
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

    def retire(self, version: int) -> None:
        """Take a version out of the chain (rollback): kept aside, never read again."""
        self.storage.rename(self._files.path(version), f"{self.folder}/rolled-back/{version:012d}.json")

    def delete(self, version: int) -> None:
        self._files.delete(version)
