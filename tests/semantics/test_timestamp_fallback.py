"""Connectors with neither LSN nor binlog position order by the finest source timestamp (docs/design.md "Order of events").

SQL Server events: `source` has ts_ms and, since Debezium 2.6, ts_us and ts_ns; the 1.x source block has ts_ms
only (tests/fixtures/debezium-events/sqlserver_1.6_debezium_server_redis_delete_with_decimal.json). The finest one
present decides (ts_ns, then ts_us, then ts_ms); the envelope's own ts_ms (processing time) never does.
"""

import copy
import json

from tests.support.debezium import INT, TEXT, Topic
from tests.support.paths import DEBEZIUM_EVENTS
from tests.support.rows import base_reader, row_maker

TOPIC = "mssql.inventory.dbo.orders"
TABLE = "inventory_dbo_orders"
T0 = 1_700_000_000_000  # ms

_ROW = {"type": "struct", "fields": [{**INT, "optional": False, "field": "id"}, {**TEXT, "optional": True, "field": "name"}],
        "optional": True, "name": f"{TOPIC}.Value"}
_KEY = {"type": "struct", "fields": [{**INT, "optional": False, "field": "id"}], "optional": False, "name": f"{TOPIC}.Key"}


def _source_schema(fine: bool) -> dict:
    fields = [("version", "string", False), ("connector", "string", False), ("name", "string", False),
              ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
              ("sequence", "string", True)]
    if fine:
        fields += [("ts_us", "int64", True), ("ts_ns", "int64", True)]
    fields += [("schema", "string", False), ("table", "string", False), ("change_lsn", "string", True),
               ("commit_lsn", "string", True), ("event_serial_no", "int64", True)]
    return {"type": "struct", "fields": [{"type": t, "optional": o, "field": n} for n, t, o in fields],
            "optional": False, "name": "io.debezium.connector.sqlserver.Source", "field": "source"}


def _envelope_schema(fine: bool) -> dict:
    return {"type": "struct", "fields": [{**_ROW, "field": "before"}, {**_ROW, "field": "after"}, _source_schema(fine),
                                         {"type": "string", "optional": False, "field": "op"},
                                         {"type": "int64", "optional": True, "field": "ts_ms"}],
            "optional": False, "name": f"{TOPIC}.Envelope", "version": 1}


_offsets = iter(range(10_000))


def ev(op, id_, name, ts_ms, ts_us=None, ts_ns=None, *, fine=True):
    """One SQL Server change event in kcat -J form; fine=False is the 1.x source block (ts_ms only)."""
    source = {"version": "3.6.1.Final" if fine else "1.6.0.Final", "connector": "sqlserver", "name": "mssql",
              "ts_ms": ts_ms, "snapshot": "false", "db": "inventory", "sequence": None}
    if fine:
        source.update(ts_us=ts_us, ts_ns=ts_ns)
    source.update(schema="dbo", table="orders", change_lsn="0000002a:00000c80:0003", commit_lsn="0000002a:00000c80:0005",
                  event_serial_no=1)
    row = {"id": id_, "name": name}
    payload = {"before": row if op == "d" else None, "after": None if op == "d" else row, "source": source, "op": op,
               "ts_ms": 9_999_999_999_999 - ts_ms}  # processing time, in the opposite order
    offset = next(_offsets)
    return {"topic": TOPIC, "partition": 0, "offset": offset, "tstype": "create", "ts": T0 + offset, "broker": 1,
            "key": json.dumps({"schema": _KEY, "payload": {"id": id_}}),
            "payload": json.dumps({"schema": _envelope_schema(fine), "payload": payload})}


_row = row_maker("id", "name")
_base = base_reader(TABLE, "id", "name", "__op", "__deleted", "__source_ts_ms", "__source_ts_us", "__position")


def test_finest_source_timestamp_orders_events(lake):
    us, ns = T0 * 1000, T0 * 1_000_000
    lake.write([
        # 1: same ms and us, 1 ns apart: ts_ns decides
        ev("u", 1, "ns later", T0, us, ns + 1), ev("u", 1, "ns earlier", T0, us, ns),
        # 2: no ts_ns; same ms, 1 us apart: ts_us decides
        ev("u", 2, "us later", T0, us + 1), ev("u", 2, "us earlier", T0, us),
        # 3: a 1.x source block, ts_ms only
        ev("c", 3, "ms later", T0 + 1, fine=False), ev("c", 3, "ms earlier", T0, fine=False),
        # 4: deleted; an update that happened 1 us before the delete arrives after it
        ev("c", 4, "four", T0, us, ns), ev("d", 4, "four updated", T0 + 5, us + 5000, ns + 5_000_000),
        ev("u", 4, "four updated", T0 + 4, us + 4999, ns + 4_999_000),
        # 5: equal timestamps: op priority (u over c), whatever the arrival order
        ev("u", 5, "u", T0, us, ns), ev("c", 5, "c", T0, us, ns),
        # 6: equal timestamps and op: the later arrival
        ev("u", 6, "first", T0, us, ns), ev("u", 6, "second", T0, us, ns),
    ])
    lake.land()
    state = [_row(1, "ns later"), _row(2, "us later"), _row(3, "ms later"), _row(5, "u"), _row(6, "second")]
    assert lake.view(TABLE) == state
    lake.compact()
    assert lake.view(TABLE) == state
    base = [
        {"id": 1, "name": "ns later", "__op": "u", "__deleted": False, "__source_ts_ms": T0, "__source_ts_us": us,
         "__position": ns + 1},
        {"id": 2, "name": "us later", "__op": "u", "__deleted": False, "__source_ts_ms": T0, "__source_ts_us": us + 1,
         "__position": ns + 1000},
        {"id": 3, "name": "ms later", "__op": "c", "__deleted": False, "__source_ts_ms": T0 + 1,
         "__source_ts_us": us + 1000, "__position": ns + 1_000_000},
        {"id": 4, "name": "four updated", "__op": "d", "__deleted": True, "__source_ts_ms": T0 + 5,
         "__source_ts_us": us + 5000, "__position": ns + 5_000_000},
        {"id": 5, "name": "u", "__op": "u", "__deleted": False, "__source_ts_ms": T0, "__source_ts_us": us,
         "__position": ns},
        {"id": 6, "name": "second", "__op": "u", "__deleted": False, "__source_ts_ms": T0, "__source_ts_us": us,
         "__position": ns},
    ]
    assert _base(lake) == base

    # after compaction: older events (by source time) of every key, each arriving last
    lake.write([
        ev("u", 1, "older", T0, us, ns), ev("u", 2, "older", T0, us), ev("u", 3, "older", T0, fine=False),
        ev("c", 4, "older", T0 + 1, us + 1000, ns + 1_000_000), ev("c", 5, "older", T0 - 1, us - 1000, ns - 1_000_000),
        ev("u", 7, "seven", T0 + 10, us + 10_000, ns + 10_000_000),
        # 8: ts_ns without ts_us: its microseconds are kept
        ev("c", 8, "eight", T0 + 20, None, ns + 20_000_123),
    ])
    lake.land()
    state += [_row(7, "seven"), _row(8, "eight")]
    assert lake.view(TABLE) == state
    lake.compact()
    assert lake.view(TABLE) == state
    assert _base(lake) == base + [
        {"id": 7, "name": "seven", "__op": "u", "__deleted": False, "__source_ts_ms": T0 + 10,
         "__source_ts_us": us + 10_000, "__position": ns + 10_000_000},
        {"id": 8, "name": "eight", "__op": "c", "__deleted": False, "__source_ts_ms": T0 + 20,
         "__source_ts_us": us + 20_000, "__position": ns + 20_000_123},
    ]


def test_sqlserver_1x_fixture_delete_orders_by_ts_ms(lake):
    """The real SQL Server 1.6 delete (Decimal and Timestamp columns), with an insert that arrives after it."""
    delete = json.loads((DEBEZIUM_EVENTS / "sqlserver_1.6_debezium_server_redis_delete_with_decimal.json").read_text())
    create = copy.deepcopy(delete)
    payload = create["payload"]
    payload.update(op="c", after=payload["before"], before=None)
    payload["source"]["ts_ms"] -= 60_000
    key = {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "empno"}],
                      "optional": False, "name": "redislabs.dbo.emp.Key"}, "payload": {"empno": 11}}
    emp = Topic("redislabs.RedisConnect.dbo.emp", [], ["empno"])
    # arrival: delete, then the insert that happened a minute before it
    lake.write([emp.line(json.dumps(key), json.dumps(v)) for v in (delete, create)])
    lake.land()
    table = "redisconnect_dbo_emp"
    assert lake.view(table) == []
    lake.compact()
    assert lake.view(table) == []
    query = (
        "SELECT empno, fname, lname, job, mgr, CAST(hiredate AS STRING) AS hiredate, CAST(sal AS STRING) AS sal, "
        f"CAST(comm AS STRING) AS comm, dept, __op, __deleted, __source_ts_ms FROM `{lake.database}`.`{table}_base`"
    )
    assert lake.rows(query) == [
        {"empno": 11, "fname": "Yossi", "lname": "Mague", "job": "PFE", "mgr": 1, "hiredate": "2019-07-09 00:00:00",
         "sal": "200000.0000", "comm": "10.0000", "dept": 3, "__op": "d", "__deleted": True,
         "__source_ts_ms": 1637859764960},
    ]
