"""Schema changes in the events, applied to the real metastore: added, dropped, widened, refused; hooks fire once."""

from __future__ import annotations

import json
import sys

from lakecompact.views.status import status
from tests.support.debezium import BIGINT, INT, TEXT, Topic, decimal, decimal_wire

V1 = [("id", INT), ("name", TEXT), ("qty", INT), ("price", decimal(6, 2)), ("legacy", TEXT)]
# qty int32 → int64, price DECIMAL(6,2) → DECIMAL(10,2), legacy dropped, email added
V2 = [("id", INT), ("name", TEXT), ("qty", BIGINT), ("price", decimal(10, 2)), ("email", TEXT)]


def test_added_dropped_and_widened_columns_read_correctly_through_the_view(lake, tmp_path):
    fired = tmp_path / "hook.jsonl"
    hook = {"kind": "command", "target": f"{sys.executable} -c \"import sys; open('{fired}', 'a').write(sys.stdin.read() + '\\n')\""}
    lake.configure(hooks=[hook])
    v1, v2 = Topic("pg.public.items", V1, ["id"]), Topic("pg.public.items", V2, ["id"])
    bad = Topic("pg.public.other", [("id", INT), ("code", TEXT)], ["id"])
    bad_v2 = Topic("pg.public.other", [("id", INT), ("code", INT)], ["id"])
    lake.write([
        v1.event("c", {"id": 1, "name": "a", "qty": 5, "price": decimal_wire("9.99", 2), "legacy": "old"}, 100),
        bad.event("c", {"id": 1, "code": "x1"}, 100),
    ])
    lake.land()
    lake.compact()
    v2.next_offset = v1.next_offset
    bad_v2.next_offset = bad.next_offset
    lake.write([
        v2.event("c", {"id": 2, "name": "b", "qty": 5_000_000_000, "price": decimal_wire("12345678.90", 2),
                       "email": "b@x"}, 200),
        v2.event("u", {"id": 1, "name": "a2", "qty": 6, "price": decimal_wire("10.00", 2), "email": "a@x"}, 300),
        bad_v2.event("u", {"id": 1, "code": 7}, 200),  # string → int: refused, the table keeps its schema
    ])
    report = lake.land()
    expected = [
        {"id": 1, "name": "a2", "qty": 6, "price": "10.00", "legacy": None, "email": "a@x"},
        {"id": 2, "name": "b", "qty": 5_000_000_000, "price": "12345678.90", "legacy": None, "email": "b@x"},
    ]

    def items():
        rows = lake.rows(f"SELECT id, name, qty, CAST(price AS STRING) AS price, legacy, email "
                         f"FROM {lake.database}.public_items ORDER BY id")
        return [{k: r.get(k) for k in ("id", "name", "qty", "price", "legacy", "email")} for r in rows]

    assert items() == expected
    lake.compact()
    assert items() == expected
    types = {r["col_name"]: r["data_type"] for r in lake.spark.sql(f"DESCRIBE {lake.database}.public_items_base").collect()}
    assert (types["qty"], types["price"], types["email"], types["legacy"]) == ("bigint", "decimal(10,2)", "string", "string")
    properties = {r["key"]: r["value"] for r in lake.spark.sql(f"SHOW TBLPROPERTIES {lake.database}.public_items_base").collect()}
    assert properties["lakecompact.schema_version"] == "2"

    # the incompatible change: its events wait in quarantine with a message naming column and types
    assert report.quarantined == {"public_other": 1}
    reasons = [r["__reason"] for r in lake.rows(
        f"SELECT __reason FROM parquet.`{lake.tmp}/warehouse/{lake.database}/public_other/_quarantine`")]
    assert len(reasons) == 1 and "column code changed from STRING to INT" in reasons[0]
    assert lake.view("public_other") == [{"id": 1, "code": "x1"}]
    table_status = {row["table"]: row for row in status(lake.spark, lake.config)}
    assert table_status[f"{lake.database}.public_other"]["quarantined"] == 1

    # hooks: once per change, with the changes classified
    lake.land()  # nothing new; a fired hook does not fire again
    payloads = [json.loads(line) for line in fired.read_text().splitlines() if line.strip()]
    by_table = {p["table"]: p for p in payloads}
    assert len(payloads) == 2 and set(by_table) == {"public_items", "public_other"}
    changes = {c["column"]: c["change"] for c in by_table["public_items"]["changes"]}
    assert changes == {"qty": "widened", "price": "widened", "legacy": "dropped", "email": "added"}
    assert by_table["public_items"]["classification"] == "compatible"
    assert by_table["public_other"]["classification"] == "incompatible"

    # a person decides: the topic goes on in a new table; the refused events are landed there
    lake.configure(hooks=[hook], tables={"public_other_v2": {"topic": "pg.public.other"}})
    requeued = lake.land(requeue="public_other")
    assert (requeued.rows_out, requeued.quarantined) == ({"public_other_v2": 1}, {})
    assert lake.view("public_other_v2") == [{"id": 1, "code": 7}]
    assert lake.view("public_other") == [{"id": 1, "code": "x1"}]  # the old table as it was
    table_status = {row["table"]: row for row in status(lake.spark, lake.config)}
    assert table_status[f"{lake.database}.public_other"]["quarantined"] == 0
