"""Hostile names cannot change SQL: topic names become safe table names; column names that are SQL words land,
backquoted everywhere (view, compaction, change feed, other engines' view text); a column name that could break
out of a quoted identifier (backquote, quote, semicolon, space, non-ASCII) is refused: its topic's events are
quarantined with a reason that names the column, and every other topic lands."""

from __future__ import annotations

import sqlglot

from lakecompact.lake.catalog import Catalog
from lakecompact.views.dialects import view_sql
from lakecompact.views.quarantine import quarantine
from lakecompact.views.read import read_changes
from lakecompact.views.status import status
from tests.support.debezium import INT, TEXT, Topic

WORDS = Topic("srv.public.select", [("order", INT), ("from", TEXT), ("table", TEXT), ("Group_By", INT)], ["order"])
HOSTILE_TOPICS = {  # topic -> the table it lands in
    "srv.public.ta`ble;drop": "public_ta_ble_drop",
    "srv.public.naïve \"x\"": "public_na_ve__x_",
}
HOSTILE_COLUMNS = ["we`ird", 'quo"te', "semi;colon", "two words", "naïve"]


def test_sql_words_land_and_names_that_could_break_sql_are_mapped_or_refused(lake):
    lines = [
        WORDS.event("c", {"order": 1, "from": "a", "table": "t", "Group_By": 1}, 100),
        WORDS.event("c", {"order": 2, "from": "b", "table": "u", "Group_By": 2}, 110),
        WORDS.event("u", {"order": 1, "from": "a2", "table": "t", "Group_By": 3}, 120),
    ]
    for n, topic in enumerate(HOSTILE_TOPICS):
        lines.append(Topic(topic, [("id", INT), ("v", TEXT)], ["id"]).event("c", {"id": n, "v": "x"}, 130 + n))
    for n, column in enumerate(HOSTILE_COLUMNS):
        bad = Topic(f"srv.public.bad{n}", [("id", INT), (column, TEXT)], ["id"])
        lines.append(bad.event("c", {"id": 1, column: "'); DROP TABLE x; --"}, 200 + n))
    lake.write(lines)
    report = lake.land()
    assert {t: n for t, n in report.rows_out.items() if n} == {"public_select": 3, **{t: 1 for t in HOSTILE_TOPICS.values()}}
    assert set(report.quarantined) == {f"public_bad{n}" for n in range(len(HOSTILE_COLUMNS))}

    # every refused column is named in its table's quarantine reason, with what was expected
    reasons = {entry["table"]: entry["reason"] for entry in quarantine(lake.spark, lake.config)}
    for n, column in enumerate(HOSTILE_COLUMNS):
        assert repr(column) in reasons[f"public_bad{n}"], reasons
        assert "expected letters, digits and _ only" in reasons[f"public_bad{n}"]

    quarantined = {row["table"]: row["quarantined"] for row in status(None, lake.config) if "base_version" not in row}
    assert quarantined == {f"{lake.database}.public_bad{n}": 1 for n in range(len(HOSTILE_COLUMNS))}

    expected = [{"order": 1, "from": "a2", "table": "t", "Group_By": 3},
                {"order": 2, "from": "b", "table": "u", "Group_By": 2}]
    assert lake.view("public_select", order="order") == expected
    for table in HOSTILE_TOPICS.values():
        assert len(lake.view(table)) == 1
    lake.compact("public_select")
    assert lake.view("public_select", order="order") == expected

    # the change feed carries the SQL words as struct fields
    [*changes] = read_changes(lake.spark, lake.config, "public_select", 1, None).collect()
    assert sorted((c["op"], c["after"]["order"], c["after"]["from"]) for c in changes) == [("i", 1, "a2"), ("i", 2, "b")]

    # other engines' view text quotes them, and parses as one statement in that dialect
    schema = Catalog(lake.spark, lake.config).require("public_select")
    for dialect, read in (("trino", "trino"), ("spark", "spark")):
        [statement] = sqlglot.parse(view_sql(schema, lake.database, dialect), read=read)
        assert {"order", "from", "table", "group_by"} <= {c.name.lower() for c in statement.find_all(sqlglot.exp.Column)}
