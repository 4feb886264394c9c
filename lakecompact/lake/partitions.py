"""What a partition number of `<t>_base` (its `__bucket`) means (docs/design.md "Partition numbers").

The number is what is stored: the folder `v=N/__bucket=n`, the manifest's keys, the metastore's partitions, the
view's SQL. These names are where Python code reads a meaning out of it."""

from __future__ import annotations

from enum import Enum

from lakecompact.config import MAX_BUCKETS

# merge-on-read: the delta of bucket b (its keys' newer rows, which shadow the bucket's own) is partition
# DELTA_BUCKETS_FROM + b of the same table, so that one swap moves buckets and deltas together
DELTA_BUCKETS_FROM = MAX_BUCKETS + 1
MARKER_BUCKET = -1  # the truncate marker's bucket: read by every compaction and by the view


class PartitionKind(Enum):
    BUCKET = "bucket"  # a keyed table's hash bucket of the key: 0 ... buckets-1
    DELTA = "delta"  # merge-on-read: the delta of bucket b, DELTA_BUCKETS_FROM + b
    TRUNCATE_MARKER = "truncate marker"  # MARKER_BUCKET: the row that a truncate left
    CHUNK = "chunk"  # a keyless table's rows appended by version N, numbered N


def kind_of(number: int, *, keyless: bool) -> PartitionKind:
    if is_marker(number):
        return PartitionKind.TRUNCATE_MARKER
    if keyless:
        return PartitionKind.CHUNK
    return PartitionKind.DELTA if is_delta(number) else PartitionKind.BUCKET


def is_marker(number: int) -> bool:
    """The truncate marker's partition."""
    return number == MARKER_BUCKET


def is_delta(number: int) -> bool:
    """A keyed table's delta of a bucket (merge-on-read)."""
    return number >= DELTA_BUCKETS_FROM


def is_data(number: int) -> bool:
    """A partition of rows of its own, not standing in for others': a bucket or a chunk (neither the truncate
    marker nor a delta)."""
    return not is_marker(number) and not is_delta(number)


def delta_of(bucket: int) -> int:
    """The partition of bucket `bucket`'s delta."""
    return DELTA_BUCKETS_FROM + bucket


def data_bucket_of(delta: int) -> int:
    """The bucket whose delta is partition `delta`."""
    return delta - DELTA_BUCKETS_FROM
