"""A source table that changes at random (`Source`: its changes in source order, the kcat lines that deliver
them, and the reference model's events), and its files delivered into the files source's folder (`deliver`)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic, write_kcat

SOURCE_EPOCH_MS = 1_700_000_000_000  # a change's source time is its position, in ms after this
DELETE_BEFORE = {"note": "", "qty": 0}  # REPLICA IDENTITY DEFAULT: the key, other columns at their defaults


class Source:
    """One table's changes in source order, the kcat lines that deliver them, and the model's events."""

    def __init__(self, topic: str, rng: random.Random):
        self.topic = Topic(topic, [("id", INT), ("note", TEXT), ("qty", INT)], ["id"])
        self.rng = rng
        self.model: list[dict] = []
        self.live: set[int] = set()  # keys with a row at the source now

    def change(self, key: int, position: int) -> list[dict]:
        """One random change of a key at a position (LSN): its line(s), and the change in the model."""
        if key not in self.live:
            op, row = "c", {"note": f"n{key}-{position}", "qty": self.rng.randint(0, 9)}
            self.live.add(key)
        elif self.rng.random() < 0.25:
            op, row = "d", DELETE_BEFORE
            self.live.discard(key)
        else:  # an update that leaves the TOASTed note unchanged sends the placeholder instead
            note = PLACEHOLDER if self.rng.random() < 0.4 else f"n{key}-{position}"
            op, row = "u", {"note": note, "qty": self.rng.randint(0, 9)}
        self.model.append({"op": op, "id": key, "row": row, "position": position, "arrival": 0})
        lines = [self.topic.event(op, {"id": key, **row}, position, SOURCE_EPOCH_MS + position)]
        return lines + ([self.topic.tombstone({"id": key})] if op == "d" else [])

    def redelivered(self, line: dict, same_offset: bool) -> dict:
        """A line sent again: read again at its offset, or re-sent as a new message (a connector restart)."""
        if same_offset:
            return dict(line)
        return self.topic.line(line["key"], line["payload"])


def deliver(folder: Path, name: str, lines: list[dict]) -> None:
    """A whole file appears at once (written aside, then renamed into the source's glob)."""
    write_kcat(folder / f".{name}.part", lines)
    os.replace(folder / f".{name}.part", folder / f"{name}.jsonl")
