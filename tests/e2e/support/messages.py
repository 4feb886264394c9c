"""Kafka messages (kcat -J objects) taken apart: envelopes, keys, source positions, kinds of event, duplicates."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from tests.support.debezium import PLACEHOLDER  # Debezium's unavailable-value (TOAST) placeholder


def envelope(message: dict) -> dict | None:
    if message["payload"] is None:
        return None
    value = json.loads(message["payload"])
    return value.get("payload", value)


def message_key(message: dict) -> Any:
    if message["key"] is None:
        return None
    key = json.loads(message["key"])
    return key.get("payload", key) if isinstance(key, dict) and "schema" in key else key


def position(message: dict) -> tuple | None:
    """The source position of an event (LSN, or binlog file/pos/row); None for a tombstone."""
    env = envelope(message)
    if env is None:
        return None
    src = env["source"]
    if src.get("lsn") is not None:
        return (src["lsn"],)
    return (src.get("file"), src.get("pos"), src.get("row"))


def op_counts(messages: list[dict]) -> Counter:
    counts = Counter()
    for m in messages:
        env = envelope(m)
        if env is None:
            counts["tombstone"] += 1
            continue
        counts[env["op"]] += 1
        if PLACEHOLDER in (m["payload"] or ""):
            counts["toast placeholder"] += 1
    return counts


def duplicates(messages: list[dict]) -> int:
    """Events delivered more than once: same topic, op, key and source position."""
    seen = Counter()
    for m in messages:
        env = envelope(m)
        if env is None:
            continue
        seen[(m["topic"], env["op"], json.dumps(message_key(m), sort_keys=True), position(m),
              json.dumps(env.get("after"), sort_keys=True))] += 1
    return sum(n - 1 for n in seen.values() if n > 1)
