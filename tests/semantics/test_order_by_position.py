"""Events of one key apply in source-position order, not arrival order (docs/design.md "Order of events")."""

from tests.support.debezium import INT, TEXT, Topic

PG = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])


def test_postgres_lsn_decides_not_arrival(lake):
    lake.write([
        PG.event("c", {"id": 1, "name": "first"}, 100),
        PG.event("u", {"id": 1, "name": "third"}, 300),
        PG.event("u", {"id": 1, "name": "second"}, 200),  # arrives last, happened in between
    ])
    lake.land()
    assert lake.view("public_items") == [{"id": 1, "name": "third"}]
    lake.compact()
    assert lake.view("public_items") == [{"id": 1, "name": "third"}]
    assert [r["__position"] for r in lake.base("public_items")] == [300]


def test_mysql_binlog_positions_compare_as_numbers(lake):
    my = Topic("my.inventory.items", [("id", INT), ("name", TEXT)], ["id"], connector="mysql")
    lake.write([
        # as strings 'mysql-bin.000010' < 'mysql-bin.000009'; as numbers file 10 is later
        my.event("u", {"id": 1, "name": "file 10"}, ("mysql-bin.000010", 4, 0)),
        my.event("u", {"id": 1, "name": "file 9"}, ("mysql-bin.000009", 999999, 0)),
        # pos 1000 > pos 999 although '1000' < '999' as text
        my.event("u", {"id": 2, "name": "pos 1000"}, ("mysql-bin.000003", 1000, 0)),
        my.event("u", {"id": 2, "name": "pos 999"}, ("mysql-bin.000003", 999, 0)),
        # rows of one binlog event: row 1 after row 0
        my.event("u", {"id": 3, "name": "row 1"}, ("mysql-bin.000003", 500, 1)),
        my.event("u", {"id": 3, "name": "row 0"}, ("mysql-bin.000003", 500, 0)),
    ])
    lake.land()
    expected = [{"id": 1, "name": "file 10"}, {"id": 2, "name": "pos 1000"}, {"id": 3, "name": "row 1"}]
    assert lake.view("inventory_items") == expected
    lake.compact()
    assert lake.view("inventory_items") == expected
