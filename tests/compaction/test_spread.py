"""Each bucket a compaction writes gets a partition of its own (compaction/spread.py): the Python hash must be
Spark's, value for value, or the buckets collide again without a word."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lakecompact.compaction.spread import bucket_spread, preimage, spark_hash
from lakecompact.lake.partitions import DELTA_BUCKETS_FROM

VALUES = [0, 1, 7, 42, -1, -42, 2**31 - 1, -(2**31), 2**31, 2**32 + 5, 2**63 - 1, -(2**63), 1_000_003]


def test_spark_hash_is_sparks_and_sends_each_value_where_repartition_does(spark):
    rows = spark.sql(
        "SELECT v, hash(v) AS h FROM VALUES " + ", ".join(f"(CAST({v} AS BIGINT))" for v in VALUES) + " AS t(v)"
    ).collect()
    assert {row.v: row.h for row in rows} == {v: spark_hash(v) for v in VALUES}
    # REPARTITION(n, c) itself, not only hash(): where each written bucket's value lands
    for partitions in (3, 8, 13):
        values = [preimage(n) for n in range(partitions)]
        landed = spark.createDataFrame([(v,) for v in values], "v BIGINT").repartition(partitions, "v") \
            .select("v", F.spark_partition_id().alias("p")).collect()
        assert {row.v: row.p for row in landed} == {v: n for n, v in enumerate(values)}


def test_preimage_undoes_spark_hash():
    for hashed in [0, 1, 2, 7, 1000, 2**20 + 3, 2**31 - 1]:
        value = preimage(hashed)
        assert 0 <= value < 2**32 and spark_hash(value) == hashed


def hash_partition(value: int, partitions: int) -> int:
    """Where REPARTITION(partitions, c) sends a BIGINT c of this value: pmod(hash(c), partitions)."""
    return spark_hash(value) % partitions


@pytest.mark.parametrize("bucket_count", [1, 4, 8, 16, 64, 256])
def test_every_written_bucket_gets_a_partition_of_its_own(bucket_count):
    target = tuple(range(0, bucket_count, 2)) + tuple(DELTA_BUCKETS_FROM + b for b in range(1, bucket_count, 2))
    spread = bucket_spread(bucket_count, target, DELTA_BUCKETS_FROM)
    assert len(spread) == bucket_count
    assert sorted(hash_partition(v, len(target)) for v in spread) == list(range(len(target)))


def test_buckets_not_written_take_no_partition_of_their_own():
    spread = bucket_spread(8, (2, DELTA_BUCKETS_FROM + 5), DELTA_BUCKETS_FROM)
    assert [hash_partition(spread[b], 2) for b in (2, 5)] == [0, 1]
    assert [spread[b] for b in (0, 1, 3, 4, 6, 7)] == [0] * 6
