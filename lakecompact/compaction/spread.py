"""Where Spark's hash partitioning sends a BIGINT, so that each bucket a compaction writes gets a partition of its
own: hashed as they are, bucket numbers collide (buckets 0-7 fill 4 of 8 partitions, one of them with 3 buckets),
and the partition holding the most buckets sets the time of the stage that resolves and writes them."""

from __future__ import annotations

_MASK = 0xFFFFFFFF
SPARK_HASH_SEED = 42  # HashPartitioning's Murmur3Hash seed, as of the SQL function hash()
_C1, _C2 = 0xCC9E2D51, 0x1B873593  # Murmur3_x86_32's constants
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35  # its finalizer's
_H, _FIVE = 0xE6546B64, 5


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _inverse(odd: int) -> int:
    return pow(odd, -1, 1 << 32)


def _k1(word: int) -> int:
    return _rotl(word * _C1 & _MASK, 15) * _C2 & _MASK


def _mix(h1: int, word: int) -> int:
    return (_rotl(h1 ^ _k1(word), 13) * _FIVE + _H) & _MASK


def _unmix(mixed: int, word: int) -> int:
    """The h1 that _mix(h1, word) turns into `mixed`."""
    return _rotl((mixed - _H) * _inverse(_FIVE) & _MASK, 32 - 13) ^ _k1(word)


def spark_hash(value: int) -> int:
    """Spark's `hash()` of a BIGINT (Murmur3_x86_32.hashLong, seed 42), a signed 32-bit int."""
    h1 = _mix(_mix(SPARK_HASH_SEED, value & _MASK), (value >> 32) & _MASK) ^ 8
    h1 = ((h1 ^ (h1 >> 16)) * _F1) & _MASK
    h1 = ((h1 ^ (h1 >> 13)) * _F2) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def preimage(hashed: int) -> int:
    """The BIGINT in [0, 2**32) whose spark_hash is `hashed` (0 <= hashed < 2**31): each step of Murmur3 over a
    fixed high word is a bijection of the low word, so it is undone step by step."""
    h1 = hashed ^ (hashed >> 16)
    h1 = h1 * _inverse(_F2) & _MASK
    h1 ^= (h1 >> 13) ^ (h1 >> 26)
    h1 = h1 * _inverse(_F1) & _MASK
    h1 ^= h1 >> 16
    k1 = _unmix(_unmix(h1 ^ 8, 0), 0) ^ SPARK_HASH_SEED  # the low word's k1 (its h1 was the seed)
    return _rotl(k1 * _inverse(_C2) & _MASK, 32 - 15) * _inverse(_C1) & _MASK


def bucket_spread(bucket_count: int, target: tuple[int, ...], delta_offset: int) -> list[int]:
    """Per bucket 0..bucket_count-1, a BIGINT that sends its rows to a partition of their own among
    len(target) partitions: the n-th written bucket (or its delta, delta_offset + b) in target order to the n-th
    partition (the value whose hash is n); 0 for a bucket not written (no row of it is distributed)."""
    place = {written % delta_offset: preimage(n) for n, written in enumerate(sorted(target))}
    return [place.get(bucket, 0) for bucket in range(bucket_count)]
