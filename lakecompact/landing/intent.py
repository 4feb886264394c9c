"""A land's intent: the batch's input, fixed in `_state/land-intent.json` before anything of the batch is written,
so that a rerun lands the same input into the same folders (docs/design.md "Landing protocol")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lakecompact.landing.files import FileRange


@dataclass(frozen=True)
class Requeue:
    """A table's quarantine folders, landed again as a batch of their own."""

    table: str
    folders: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class LandIntent:
    """Batch `batch`'s input: file line ranges, Kafka offset ranges or requeued quarantine folders (one of them)."""

    batch: int
    hour: str  # the increment's hour partition, yyyymmddhh (UTC)
    landed_at: str  # ISO 8601 (UTC), kept in the increment's counts
    files: tuple[FileRange, ...] | None = None
    kafka: dict[str, dict[str, int]] | None = None  # {"topic:partition": {"start": s, "end": e}}, end exclusive
    requeue: Requeue | None = None

    @classmethod
    def new(cls, batch: int, now: datetime | None = None) -> LandIntent:
        """Batch `batch`, landed `now` (default: now), its input not yet named."""
        now = now or datetime.now(UTC)
        return cls(batch=batch, hour=now.strftime("%Y%m%d%H"), landed_at=now.isoformat())

    def reading(self, **source: Any) -> LandIntent:
        """This intent with its input: `files=`, `kafka=` or `requeue=`."""
        return dataclasses.replace(self, **source)

    def topics_named(self) -> tuple[set[str], bool]:
        """The topics the input names (a file's by `FileRange.topics`, Kafka's by its partitions), and whether some
        of it names none (files with a line kcat did not start with its topic; a requeue)."""
        if self.files is not None:
            return ({t for r in self.files for t in r.topics or ()},
                    any(r.topics is None for r in self.files))
        if self.kafka is not None:
            return {_topic_of(name) for name, bounds in self.kafka.items() if bounds["end"] > bounds["start"]}, False
        return set(), True

    def of_topics(self, topics: set[str]) -> LandIntent:
        """This intent with only the input that may hold events of `topics`."""
        if self.files is not None:
            return dataclasses.replace(self, files=tuple(r for r in self.files if r.may_hold(topics)))
        if self.kafka is not None:
            return dataclasses.replace(self, kafka={n: b for n, b in self.kafka.items() if _topic_of(n) in topics})
        return self

    def value_schemas(self, topic: str) -> tuple[str, ...]:
        """The value schema texts the planner saw `topic`'s new lines start with (`FileRange.value_schemas`), in the
        order its files (by path) and their lines show them first; empty for a Kafka batch or a rerun."""
        seen: dict[str, None] = {}
        for r in self.files or ():
            seen.update((text, None) for named, text in r.value_schemas if named == topic)
        return tuple(seen)

    def last(self, count: int) -> LandIntent:
        """This intent with only the last `count` offsets of each Kafka partition (the same input otherwise)."""
        if self.kafka is None:
            return self
        return dataclasses.replace(self, kafka={n: {"start": max(b["start"], b["end"] - count), "end": b["end"]}
                                                for n, b in self.kafka.items()})

    def events_apart_from(self, topics: set[str]) -> int:
        """How many events (at most) the input holds that cannot be of `topics`: the lines of files that name only
        other topics, the offsets of other topics' partitions."""
        if self.files is not None:
            return sum(r.end - r.start for r in self.files if not r.may_hold(topics))
        return sum(max(0, b["end"] - b["start"]) for n, b in (self.kafka or {}).items() if _topic_of(n) not in topics)

    def to_json(self) -> dict[str, Any]:
        raw: dict[str, Any] = {"batch": self.batch, "hour": self.hour, "landed_at": self.landed_at}
        if self.files is not None:
            raw["files"] = [r.to_json() for r in self.files]
        if self.kafka is not None:
            raw["kafka"] = self.kafka
        if self.requeue is not None:
            raw["requeue"] = {"table": self.requeue.table, "folders": list(self.requeue.folders)}
        return raw

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> LandIntent:
        requeue = raw.get("requeue")
        return cls(
            batch=raw["batch"],
            hour=raw["hour"],
            landed_at=raw["landed_at"],
            files=None if "files" not in raw else tuple(FileRange.from_json(r) for r in raw["files"]),
            kafka=raw.get("kafka"),
            requeue=None if requeue is None else Requeue(requeue["table"], tuple(requeue["folders"])),
        )


def _topic_of(partition: str) -> str:
    """The topic of a Kafka partition's name, "topic:partition"."""
    return partition.rsplit(":", 1)[0]
