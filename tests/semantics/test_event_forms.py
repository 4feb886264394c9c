"""The event forms lakecompact reads, with Debezium's own examples in tests/fixtures/debezium-events.

- ExtractNewRecordState rows (delete.tombstone.handling.mode=rewrite, add.fields=op,table,lsn,source.ts_ms):
  `__deleted` "true"/"false", `__op`, `__lsn` and `__source_ts_ms` become the meta columns; without `__op`
  the row is an upsert, or a delete when `__deleted` is "true".
- Schema-less events (JsonConverter schemas.enable=false) of a table whose schema is known from earlier events.
- The PostgreSQL envelopes (create, update and delete under REPLICA IDENTITY DEFAULT, tombstone, snapshot read)
  and the MySQL ones (a 3.x create; the tutorial's console `key<TAB>value` lines, whose source has `ts_sec`).
"""

import dataclasses
import json

from tests.support.debezium import DATE, INT, TEXT, Topic, decimal, decimal_wire
from tests.support.paths import DEBEZIUM_EVENTS
from tests.support.rows import picked

CUSTOMER_COLUMNS = ("id", "first_name", "last_name", "email")


def _json(name):
    return json.loads((DEBEZIUM_EVENTS / name).read_text())


def _dumps(value):
    return json.dumps(value, separators=(",", ":"))


class Kcat:
    """kcat -J lines of one topic, from message texts."""

    def __init__(self, topic):
        self.topic, self.offset = topic, 0

    def __call__(self, key, value):
        self.offset += 1
        return {"topic": self.topic, "partition": 0, "offset": self.offset, "tstype": "create",
                "ts": 1_767_611_600_000 + self.offset, "broker": 1,
                "key": key if key is None or isinstance(key, str) else _dumps(key),
                "payload": value if value is None or isinstance(value, str) else _dumps(value)}


def _customer(id_, first, last, email):
    return {"id": id_, "first_name": first, "last_name": last, "email": email}


ANNE = _customer(1004, "Anne", "Kretchmar", "annek@noanswer.org")
ANNE_MARIE = _customer(1004, "Anne Marie", "Kretchmar", "annek@noanswer.org")


_pick = picked


# -- ExtractNewRecordState ---------------------------------------------------------------------------------
UNWRAP = _json("unwrap_3x_RECONSTRUCTED_rewrite_add_fields.json")
# the rewritten value's added fields: without them a row is ExtractNewRecordState's default, which marks no delete
BARE = tuple(f["field"] for f in UNWRAP["create_value"]["schema"]["fields"] if f["field"].startswith("__"))
FLAT = Kcat("flat.inventory.customers")
PG_KEY = _json("pg_3x_RECONSTRUCTED_key.json")


def _flat(values, drop=()):
    """A rewritten value like the example's create_value, with other values, and fields left out."""
    schema = dict(UNWRAP["create_value"]["schema"])
    schema["fields"] = [f for f in schema["fields"] if f["field"] not in drop]
    payload = {**UNWRAP["create_value"]["payload"], **values}
    return {"schema": schema, "payload": {k: v for k, v in payload.items() if k not in drop}}


def _key(id_):
    return {**PG_KEY, "payload": {"id": id_}}


def _flat_batches():
    update = _flat({**ANNE_MARIE, "__op": "u", "__lsn": 26845000, "__source_ts_ms": 1767611700111})
    no_op = ("__op", "__table")  # add.fields without op: __deleted says what happened
    first = [
        FLAT(PG_KEY, UNWRAP["create_value"]),
        FLAT(PG_KEY, update),
        FLAT(_key(1005), _flat({**_customer(1005, "Bob", "B", "bob@x"), "__lsn": 26850000}, drop=no_op)),
        FLAT(_key(1005), _flat({**_customer(1005, "Bobby", "B", "bob@x"), "__lsn": 26851000}, drop=no_op)),
        FLAT(_key(1006), _flat({**_customer(1006, "Carl", "C", "carl@x"), "__lsn": 26850000}, drop=no_op)),
    ]
    second = [
        FLAT(PG_KEY, UNWRAP["delete_value_rewritten_from_before_REPLICA_IDENTITY_FULL"]),
        FLAT(_key(1006), _flat({**_customer(1006, "Carl", "C", "carl@x"), "__deleted": "true", "__lsn": 26852000,
                                "__source_ts_ms": 1767611900000}, drop=no_op)),
        FLAT(_key(1005), _flat({**_customer(1005, "Bob", "B", "bob@x"), "__lsn": 26850000}, drop=no_op)),  # late
    ]
    return first, second


# -- schema-less events after the schema is known ------------------------------------------------------------
NOTES = Topic("pg.public.notes", [("id", INT), ("body", TEXT), ("price", decimal(10, 2)), ("day", DATE)], ["id"])
NOTES_BARE = dataclasses.replace(NOTES, with_schema=False, next_offset=100)


def _note(id_, body, price, day):
    return {"id": id_, "body": body, "price": decimal_wire(price, 2), "day": day}


# -- real PostgreSQL and MySQL envelopes ---------------------------------------------------------------------
PG = Kcat("dbserver1.inventory.customers")
MYSQL = Kcat("mysql-server-1.inventory.customers")
TUTORIAL = Kcat("tutorial.inventory.customers")


def _tutorial_lines():
    lines = []
    for text in (DEBEZIUM_EVENTS / "mysql_tutorial_console_key_TAB_value_lines.txt").read_text().splitlines():
        key, value = text.split("\t")
        lines.append(TUTORIAL(key, value))
    return lines


def _mysql_key():
    return {"schema": {**PG_KEY["schema"], "name": "mysql-server-1.inventory.customers.Key"}, "payload": {"id": 1004}}


def test_event_forms(lake):
    lake.configure(tables={
        "flat_customers": {"topic": "flat.inventory.customers"},
        "my_customers": {"topic": "mysql-server-1.inventory.customers"},
        "tutorial_customers": {"topic": "tutorial.inventory.customers"},
    })
    flat_1, flat_2 = _flat_batches()
    lake.write([
        *flat_1,
        NOTES.event("c", _note(1, "one", "12.34", 19000), 100),
        NOTES.event("c", _note(2, "two", "0.50", 19001), 100),
        PG(PG_KEY, _json("pg_3x_RECONSTRUCTED_create_value.json")),
        PG(PG_KEY, _json("pg_3x_RECONSTRUCTED_update_value_replica_identity_default.json")),
        MYSQL(_mysql_key(), _json("mysql_3x_RECONSTRUCTED_create_value.json")),
        *_tutorial_lines(),
    ])
    lake.land()

    # flattened: columns are the row's, the add.fields are meta
    flat_view = lake.view("flat_customers", meta=True)
    assert _pick(flat_view, CUSTOMER_COLUMNS) == [
        ANNE_MARIE, _customer(1005, "Bobby", "B", "bob@x"), _customer(1006, "Carl", "C", "carl@x"),
    ]
    assert _pick(flat_view, ("__op", "__lsn", "__source_ts_ms", "__deleted")) == [
        {"__op": "u", "__lsn": 26845000, "__source_ts_ms": 1767611700111, "__deleted": False},
        {"__op": "u", "__lsn": 26851000, "__source_ts_ms": 1767611600111, "__deleted": False},
        {"__op": "u", "__lsn": 26850000, "__source_ts_ms": 1767611600111, "__deleted": False},
    ]
    assert set(lake.view("flat_customers")[0]) == set(CUSTOMER_COLUMNS)  # __table is not a column

    assert lake.view("public_notes") == [
        {"id": 1, "body": "one", "price": 12.34, "day": "2022-01-08"},
        {"id": 2, "body": "two", "price": 0.5, "day": "2022-01-09"},
    ]

    pg_view = lake.view("inventory_customers", meta=True)
    assert _pick(pg_view, CUSTOMER_COLUMNS) == [ANNE_MARIE]
    assert _pick(pg_view, ("__op", "__lsn", "__source_ts_ms", "__binlog_file")) == [
        {"__op": "u", "__lsn": 26845000, "__source_ts_ms": 1767611700111, "__binlog_file": None},
    ]

    mysql_meta = ("__op", "__source_ts_ms", "__lsn", "__binlog_file", "__binlog_pos", "__binlog_row", "__position")
    my_view = lake.view("my_customers", meta=True)
    my_expected = [{"__op": "c", "__source_ts_ms": 1767611600000, "__lsn": None, "__binlog_file": "mysql-bin.000003",
                    "__binlog_pos": 1041, "__binlog_row": 0, "__position": 3 * 10**30 + 1041 * 10**10}]
    assert _pick(my_view, CUSTOMER_COLUMNS) == [ANNE]
    assert _pick(my_view, mysql_meta) == my_expected

    tutorial_view = lake.view("tutorial_customers", meta=True)
    tutorial_rows = [_customer(1005, "Sarah", "Thompson", "kitt@acme.com"),
                     _customer(1006, "Kenneth", "Anderson", "kander@acme.com")]
    tutorial_expected = [
        {"__op": "c", "__source_ts_ms": 1490635153000, "__lsn": None, "__binlog_file": "mysql-bin.000003",
         "__binlog_pos": 1046, "__binlog_row": 0, "__position": 3 * 10**30 + 1046 * 10**10},
        {"__op": "c", "__source_ts_ms": 1490635160000, "__lsn": None, "__binlog_file": "mysql-bin.000003",
         "__binlog_pos": 1356, "__binlog_row": 0, "__position": 3 * 10**30 + 1356 * 10**10},
    ]
    assert _pick(tutorial_view, CUSTOMER_COLUMNS) == tutorial_rows
    assert _pick(tutorial_view, mysql_meta) == tutorial_expected

    lake.write([
        *flat_2,
        NOTES_BARE.event("u", _note(1, "one updated", "-5.5", 19005), 200),
        NOTES_BARE.event("d", {"id": 2, "body": "", "price": decimal_wire("0", 2), "day": 0}, 200),
        NOTES_BARE.tombstone({"id": 2}),
        NOTES_BARE.event("c", _note(3, "three", "1000.01", 19010), 300),
        PG(PG_KEY, _json("pg_3x_RECONSTRUCTED_delete_value_replica_identity_default.json")),
        PG(PG_KEY, None),  # the tombstone (pg_3x_RECONSTRUCTED_tombstone.txt): the value is null
        PG(PG_KEY, _json("pg_3x_RECONSTRUCTED_read_snapshot_value.json")),  # older: a late snapshot read
    ])
    lake.land()
    flat_view = [_customer(1005, "Bobby", "B", "bob@x")]
    notes = [{"id": 1, "body": "one updated", "price": -5.5, "day": "2022-01-13"},
             {"id": 3, "body": "three", "price": 1000.01, "day": "2022-01-18"}]
    assert lake.view("flat_customers") == flat_view
    assert lake.view("public_notes") == notes
    assert lake.view("inventory_customers") == []

    lake.compact()
    assert lake.view("flat_customers") == flat_view
    assert lake.view("public_notes") == notes
    assert lake.view("inventory_customers") == []
    assert lake.view("my_customers") == [ANNE]
    assert lake.view("tutorial_customers") == tutorial_rows

    base_meta = ("__op", "__deleted", "__lsn", "__source_ts_ms")
    flat_base = lake.base("flat_customers")
    assert _pick(flat_base, CUSTOMER_COLUMNS) == [
        ANNE_MARIE, _customer(1005, "Bobby", "B", "bob@x"), _customer(1006, "Carl", "C", "carl@x"),
    ]
    assert _pick(flat_base, base_meta) == [
        {"__op": "d", "__deleted": True, "__lsn": 26846000, "__source_ts_ms": 1767611800111},
        {"__op": "u", "__deleted": False, "__lsn": 26851000, "__source_ts_ms": 1767611600111},
        {"__op": "d", "__deleted": True, "__lsn": 26852000, "__source_ts_ms": 1767611900000},
    ]
    pg_base = lake.base("inventory_customers")
    assert _pick(pg_base, CUSTOMER_COLUMNS) == [ANNE_MARIE]  # not the delete's "" fallbacks
    assert _pick(pg_base, base_meta) == [
        {"__op": "d", "__deleted": True, "__lsn": 26846000, "__source_ts_ms": 1767611800111},
    ]
    notes_base = lake.rows(
        "SELECT id, body, CAST(price AS STRING) AS price, CAST(day AS STRING) AS day, __op, __deleted "
        f"FROM `{lake.database}`.`public_notes_base` ORDER BY id"
    )
    assert notes_base == [
        {"id": 1, "body": "one updated", "price": "-5.50", "day": "2022-01-13", "__op": "u", "__deleted": False},
        {"id": 2, "body": "two", "price": "0.50", "day": "2022-01-09", "__op": "d", "__deleted": True},
        {"id": 3, "body": "three", "price": "1000.01", "day": "2022-01-18", "__op": "c", "__deleted": False},
    ]
    assert _pick(lake.base("my_customers"), CUSTOMER_COLUMNS + mysql_meta) == [{**ANNE, **my_expected[0]}]
    assert _pick(lake.base("tutorial_customers"), CUSTOMER_COLUMNS + mysql_meta) == [
        {**row, **meta} for row, meta in zip(tutorial_rows, tutorial_expected)
    ]


def test_tombstone_only_deletes_of_a_flattened_topic_are_kept_not_skipped(lake):
    """ExtractNewRecordState's default (delete.tombstone.handling.mode=tombstone, no add.fields) sends a delete as
    a Kafka tombstone alone, with no position: skipping it would lose the delete, so it waits in quarantine with
    what to configure. With rewrite-with-tombstone the delete is the `__deleted` row, and the tombstone is skipped."""
    lake.configure(tables={"plain_customers": {"topic": "plain.inventory.customers"},
                           "flat_customers": {"topic": "flat.inventory.customers"}})
    plain = Kcat("plain.inventory.customers")
    rewrite, _ = _flat_batches()
    lake.write([
        plain(_key(1005), _flat(_customer(1005, "Bob", "B", "bob@x"), drop=BARE)),
        plain(_key(1006), _flat(_customer(1006, "Carl", "C", "carl@x"), drop=BARE)),
        plain(_key(1005), None),
        *rewrite,
        FLAT(_key(1006), _flat({**_customer(1006, "Carl", "C", "carl@x"), "__deleted": "true", "__lsn": 26852000},
                               drop=("__op", "__table"))),
        FLAT(_key(1006), None),
    ])
    report = lake.land()

    assert report.quarantined == {"plain_customers": 1}
    assert report.skipped == 1  # the rewrite-with-tombstone topic's tombstone: its delete is the row before it
    [kept] = lake.rows(f"SELECT __reason, key FROM parquet.`{lake.tmp}/warehouse/{lake.database}/plain_customers/_quarantine`")
    assert "delete.tombstone.handling.mode=rewrite" in kept["__reason"] and '"id":1005' in kept["key"]
    assert [r["id"] for r in lake.view("flat_customers", order="id")] == [1004, 1005]

    # a batch with only the tombstone: the table remembers how its deletes come; a requeue keeps it too
    lake.write([plain(_key(1006), None)], name="later.jsonl")
    assert lake.land().quarantined == {"plain_customers": 1}
    again = lake.land(requeue="plain_customers")
    assert again.quarantined == {"plain_customers": 2} and again.skipped == 0
    assert [r["id"] for r in lake.view("plain_customers", order="id")] == [1005, 1006]


def test_a_topic_whose_deletes_turn_to_bare_tombstones_stays_so_past_a_swap_begun_before(lake):
    """A topic whose deletes begin to come as bare Kafka tombstones (ExtractNewRecordState set up later, with its
    default delete handling) is remembered so, also when a compactor of the table swapped a version meanwhile. A swap
    writes the table's properties back as it read them, its own version among them: the metastore's alter_table
    replaces them all, so a property the lander set after that read is gone. A later batch of tombstones alone must
    still wait in quarantine, not be skipped as the deletes of a topic whose rows carry a delete marker."""
    lake.configure(tables={"plain_customers": {"topic": "plain.inventory.customers"}})
    plain = Kcat("plain.inventory.customers")
    marked = ("__op", "__table")  # the rows say `__deleted`: a delete is a row, its tombstone is skipped
    lake.write([plain(_key(1005), _flat({**_customer(1005, "Bob", "B", "bob@x"), "__lsn": 26850000}, drop=marked))])
    lake.land()
    base = f"`{lake.database}`.`plain_customers_base`"
    read_by_the_swap = _lakecompact_properties(lake, base)

    lake.write([plain(_key(1006), _flat(_customer(1006, "Carl", "C", "carl@x"), drop=BARE))], name="bare.jsonl")
    assert lake.land().rows_out == {"plain_customers": 1}
    # the swap's write: the properties as it read them before that land, none set since kept
    since = [name for name in _lakecompact_properties(lake, base) if name not in read_by_the_swap]
    if since:
        lake.spark.sql(f"ALTER TABLE {base} UNSET TBLPROPERTIES ({', '.join(repr(n) for n in since)})")
    lake.spark.sql(f"ALTER TABLE {base} SET TBLPROPERTIES "
                   f"({', '.join(f'{n!r} = {v!r}' for n, v in read_by_the_swap.items())})")

    lake.write([plain(_key(1006), None)], name="tombstone.jsonl")
    report = lake.land()
    assert report.quarantined == {"plain_customers": 1} and report.skipped == 0
    assert [r["id"] for r in lake.view("plain_customers", order="id")] == [1005, 1006]


def _lakecompact_properties(lake, table):
    return {name: value for name, value in lake.spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
            if name.startswith("lakecompact.")}


def test_a_lake_landed_into_before_keeps_the_delete_form_it_kept_as_a_table_property(lake):
    """Lakes landed into by an earlier lakecompact kept how a table's deletes come as the `lakecompact.deletes` table
    property: read from there while the table's state has no record, and recorded there once read."""
    lake.configure(tables={"plain_customers": {"topic": "plain.inventory.customers"}})
    plain = Kcat("plain.inventory.customers")
    lake.write([plain(_key(1005), _flat(_customer(1005, "Bob", "B", "bob@x"), drop=BARE))])
    lake.land()
    recorded = lake.tmp / "warehouse" / lake.database / "plain_customers" / "_state" / "deletes.json"
    assert json.loads(recorded.read_text()) == {"deletes": "tombstones"}
    recorded.unlink()  # as an earlier lakecompact left it: the table property only
    lake.spark.sql(f"ALTER TABLE `{lake.database}`.`plain_customers_base` "
                   "SET TBLPROPERTIES ('lakecompact.deletes' = 'tombstones')")

    lake.write([plain(_key(1005), None)], name="tombstone.jsonl")
    assert lake.land().quarantined == {"plain_customers": 1}
    assert json.loads(recorded.read_text()) == {"deletes": "tombstones"}
