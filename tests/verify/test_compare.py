"""verify's comparison of two frames (docs/design.md "Verify"): values normalised alike on both sides compare
equal, and every difference is found by kind, key and column; a keyless table compares as a multiset."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from lakecompact.errors import LakecompactError
from lakecompact.verify.verify import verify_table_rows

# The source as Spark's JDBC source reads a MariaDB table: TINYINT(1) as a boolean, DATETIME as a wall-clock
# time, DECIMAL(10,3); the lake as Debezium landed it: SMALLINT, a UTC timestamp, DECIMAL(12,2), a float widened.
SOURCE = "id INT, flag BOOLEAN, at TIMESTAMP_NTZ, amount DECIMAL(10,3), ratio FLOAT, note STRING"
LAKE = "id BIGINT, flag SMALLINT, at TIMESTAMP, amount DECIMAL(12,2), ratio FLOAT, note STRING"
WALL = dt.datetime(2026, 11, 29, 3, 4, 5, 123456)


def _rows(n: int) -> list[tuple]:
    return [(i, i % 2 == 0, WALL + dt.timedelta(days=i), Decimal(f"{i}.5"), 0.1 * i, f"note {i}") for i in range(n)]


def _frames(spark, source_rows, lake_rows):
    lake = [(i, int(flag), at.replace(tzinfo=dt.UTC), amount, ratio, note)
            for i, flag, at, amount, ratio, note in lake_rows]
    return spark.createDataFrame(source_rows, SOURCE), spark.createDataFrame(lake, LAKE)


def _found(differences) -> dict[str, list]:
    found: dict[str, list] = {}
    for row in differences.collect() if differences is not None else []:
        found.setdefault(row["kind"], []).append((row["key"], tuple(row["columns"]), row["copies"]))
    return {kind: sorted(keys) for kind, keys in found.items()}


def test_equal_tables_differ_in_no_bucket(spark):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    source, lake = _frames(spark, _rows(40), _rows(40))
    buckets, differences, left_out = verify_table_rows(spark, source, lake, table="t", key=["id"], buckets=8)
    assert differences is None and left_out == ()
    assert sum(b["source_rows"] for b in buckets) == sum(b["lake_rows"] for b in buckets) == 40
    assert not any(b["differs"] for b in buckets)


def test_every_difference_is_found_by_kind_key_and_column(spark):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    rows = _rows(40)
    lake = [r for r in rows if r[0] != 7]  # key 7 never landed
    lake.append((99, True, WALL, Decimal("1.5"), 0.5, "deleted at the source"))  # a delete that never landed
    lake[3] = (3, rows[3][1], rows[3][2] + dt.timedelta(microseconds=1), rows[3][3], rows[3][4], rows[3][5])
    lake[5] = (5, not rows[5][1], rows[5][2], rows[5][3], rows[5][4], None)
    source, lake = _frames(spark, rows, lake)
    buckets, differences, _ = verify_table_rows(spark, source, lake, table="t", key=["id"], buckets=8)
    assert 2 <= sum(b["differs"] for b in buckets) <= 4
    assert _found(differences) == {
        "missing in the lake": [('["7"]', (), 1)],
        "extra in the lake": [('["99"]', (), 1)],
        "different values": [('["3"]', ("at",), 1), ('["5"]', ("flag", "note"), 1)],
    }


def test_a_keyless_table_compares_as_a_multiset(spark):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    rows = _rows(10)
    source, lake = _frames(spark, rows + [rows[2]] * 2, rows + [rows[4]])  # row 2 thrice at the source, 4 twice in the lake
    _, differences, _ = verify_table_rows(spark, source, lake, table="t", key=[], buckets=4)
    found = {row["kind"]: (row["copies"], row["source_row"] or row["lake_row"]) for row in differences.collect()}
    assert set(found) == {"missing in the lake", "extra in the lake"}
    assert found["missing in the lake"][0] == 2 and '"note":"note 2"' in found["missing in the lake"][1]
    assert found["extra in the lake"][0] == 1 and '"note":"note 4"' in found["extra in the lake"][1]


def test_a_column_whose_types_cannot_compare_is_left_out_and_named(spark):
    source = spark.createDataFrame([(1, "2026-11-29")], "id INT, day STRING")
    lake = spark.createDataFrame([(1, 20421)], "id INT, day BIGINT")
    _, differences, left_out = verify_table_rows(spark, source, lake, table="t", key=["id"], buckets=4)
    assert differences is None
    assert left_out == ("day (the source has string, the lake bigint)",)


def test_a_key_column_that_cannot_compare_is_an_error(spark):
    source = spark.createDataFrame([("a",)], "id STRING")
    lake = spark.createDataFrame([(1,)], "id INT")
    with pytest.raises(LakecompactError, match="key column id: the source has string, the lake int"):
        verify_table_rows(spark, source, lake, table="t", key=["id"], buckets=4)


@pytest.mark.parametrize(("driver_said", "code", "line"), [
    ("java.net.ConnectException: Connection refused", 6, "verify t: the database did not answer: Connection refused"),
    ("org.postgresql.util.PSQLException: Connection to db:5432 refused. Check that the hostname and port are correct",
     6, ("verify t: the database did not answer: Connection to db:5432 refused. Check that the hostname and port are "
        "correct")),
    ('org.postgresql.util.PSQLException: ERROR: relation "s.nope" does not exist\n  Position: 15', 2,
     'verify t: ERROR: relation "s.nope" does not exist'),
    ("java.sql.SQLInvalidAuthorizationSpecException: (conn=7) Access denied for user 'lake'@'localhost'", 2,
     "verify t: (conn=7) Access denied for user 'lake'@'localhost'"),
])
def test_a_source_that_cannot_be_read_is_one_line_saying_why(driver_said, code, line):
    from lakecompact.verify.source import unreadable

    error = unreadable("verify t", RuntimeError(driver_said))
    assert (error.exit_code, str(error)) == (code, line)
