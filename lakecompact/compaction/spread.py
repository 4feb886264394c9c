"""Where Spark's hash partitioning sends a BIGINT, so that each bucket a compaction writes gets a partition of its
own: hashed as they are, bucket numbers collide (buckets 0-7 fill 4 of 8 partitions, one of them with 3 buckets),
and the partition holding the most buckets sets the time of the stage that resolves and writes them."""

from __future__ import annotations

import functools

_MASK = 0xFFFFFFFF
SPARK_HASH_SEED = 42  # HashPartitioning's Murmur3Hash seed, as of the SQL function hash()


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _mix(h1: int, word: int) -> int:
    k1 = _rotl((word * 0xCC9E2D51) & _MASK, 15) * 0x1B873593 & _MASK
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def spark_hash(value: int) -> int:
    """Spark's `hash()` of a BIGINT (Murmur3_x86_32.hashLong, seed 42), a signed 32-bit int."""
    h1 = _mix(_mix(SPARK_HASH_SEED, value & _MASK), (value >> 32) & _MASK) ^ 8
    h1 = ((h1 ^ (h1 >> 16)) * 0x85EBCA6B) & _MASK
    h1 = ((h1 ^ (h1 >> 13)) * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def hash_partition(value: int, partitions: int) -> int:
    """The partition that REPARTITION(partitions, c) sends a BIGINT c of this value to: pmod(hash(c), partitions)."""
    return spark_hash(value) % partitions  # Python's % of a positive divisor is pmod


@functools.cache
def partition_values(partitions: int) -> tuple[int, ...]:
    """For each partition 0..partitions-1, the smallest non-negative BIGINT that hash partitioning sends there."""
    found: dict[int, int] = {}
    value = 0
    while len(found) < partitions:
        found.setdefault(hash_partition(value, partitions), value)
        value += 1
    return tuple(found[p] for p in range(partitions))


def bucket_spread(bucket_count: int, target: tuple[int, ...], delta_offset: int) -> list[int]:
    """Per bucket 0..bucket_count-1, a BIGINT that sends its rows to a partition of their own among
    len(target) partitions: the n-th written bucket (or its delta, delta_offset + b) in target order to the n-th
    partition; 0 for a bucket not written (no row of it is distributed)."""
    values = partition_values(max(len(target), 1))
    place = {written % delta_offset: values[n] for n, written in enumerate(sorted(target))}
    return [place.get(bucket, 0) for bucket in range(bucket_count)]
