"""What a new user tripped on (issue 58), with Spark: `sql` prints nulls and has --format; `report` shows the
quarantine of no table as `status` does; a line that is not UTF-8 but names its topic is filed under its table,
identified by file:line, and `report` counts it as no table; after a rollback `history` shows the next compaction
under a new number, compacted from the version rolled back to. The checks without Spark are in
tests/unit/test_cli_arguments.py."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from lakecompact.views.history import history, print_history
from lakecompact.views.html_report import write_report
from lakecompact.views.quarantine import print_quarantine, quarantine
from lakecompact.views.read import run_sql
from lakecompact.views.status import status
from tests.support.cli import ROOT, minimal_config, process_env
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import quarantined

TABLE = "public_items"


def test_quarantine_report_history_and_sql_output_as_a_new_user_reads_them(lake, tmp_path, capsys):
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    good = [json.dumps(pg.event("c", {"id": 1, "name": "one"}, 100)).encode(),
            json.dumps(pg.event("c", {"id": 2, "name": None}, 110)).encode()]
    not_utf8 = json.dumps(pg.event("c", {"id": 3, "name": "NOTUTF8"}, 120)).encode().replace(b"NOTUTF8", b"\xff\xfe")
    malformed = b'{"topic": "pg.public.items", oops'
    path = lake.events_dir / "part-1.jsonl"
    path.write_bytes(b"\n".join([good[0], not_utf8, malformed, good[1]]) + b"\n")

    report = lake.land()
    # the line whose topic was readable goes to its table (created by this very batch), the other to _unknown
    assert report.quarantined == {TABLE: 1, "_unknown": 1}
    assert report.events_in == 4 == sum(report.rows_out.values()) + 2 + report.skipped
    [bad_bytes] = quarantined(lake, TABLE)
    [bad_json] = quarantined(lake, None)
    assert bad_bytes["__reason"] == "line is not valid UTF-8 text" and bad_bytes["__origin"].endswith("part-1.jsonl:2")
    assert bad_json["__origin"].endswith("part-1.jsonl:3")
    capsys.readouterr()
    print_quarantine(quarantine(lake.spark, lake.config), None)
    samples = [line.strip() for line in capsys.readouterr().out.splitlines() if line.startswith("      batch")]
    # both identified as file:line (the files source), not one as topic[partition]@offset
    assert [s.split(": key")[0].rsplit("/", 1)[-1] for s in samples] == ["part-1.jsonl:2", "part-1.jsonl:3"]

    # report: the quarantine of no table is in its state table and has a section, as status lists it
    assert [r["quarantined"] for r in status(None, lake.config) if r["table"] == "_unknown"] == [1]
    page = tmp_path / "report.html"
    capsys.readouterr()
    write_report(None, lambda: lake.spark, lake.config, str(page))
    [said] = capsys.readouterr().out.splitlines()
    assert said.startswith("report: 1 table(s) and the quarantine of events of no table, ") and str(page) in said
    text = page.read_text()
    [unknown] = re.findall(r"<tr><td>_unknown</td>(.*?)</tr>", text)
    assert re.findall(r"<td[^>]*>(.*?)</td>", unknown) == ["-", "-", "-", "-", "-", "1", "-", "-", "-"]
    assert '<h2 id="_unknown">_unknown: events of no table</h2>' in text
    assert "line is not a JSON object (malformed or truncated)" in text and "line is not valid UTF-8 text" in text

    # sql: a null printed as null, not left out; --format table
    printed = io.StringIO()
    assert run_sql(lake.spark, lake.config, "SELECT id, name FROM public_items ORDER BY id", out=printed) == 2
    assert printed.getvalue().splitlines() == ['{"id":1,"name":"one"}', '{"id":2,"name":null}']
    printed = io.StringIO()
    assert run_sql(lake.spark, lake.config, "SELECT id, name, '' AS e FROM public_items ORDER BY id", out=printed,
                   fmt="table") == 2
    assert printed.getvalue().splitlines() == ["id | name | e", "-- | ---- | -", "1  | one  |", "2  | null |"]

    # history: v1 rolled back, then compacted again: as v2, which says it was compacted from v0
    lake.compact()
    lake.rollback(TABLE)
    lake.compact()
    rows = history(None, lake.config, TABLE)
    assert [(r["version"], r["state"], r["compacted_from"]) for r in rows] == [(1, "rolled back", 0),
                                                                              (2, "current", 0)]
    first, second = rows
    assert first["created_at"] < first["rolled_back_at"] < second["created_at"] and second["rolled_back_at"] is None
    out = io.StringIO()
    print_history(TABLE, rows, out)
    when = first["rolled_back_at"]
    assert [line.split(":", 1)[0] for line in out.getvalue().splitlines()] == [
        f"{TABLE} v1 (rolled back at {when[:10]} {when[11:13]}", f"{TABLE} v2 (current, compacted from v0)"]
    assert f"(rolled back at {when[:10]} {when[11:19]} UTC): " in out.getvalue()


@pytest.mark.spark
def test_sql_as_csv_with_the_config_after_the_command(tmp_path):
    """One process: `--config` after the command is taken; CSV tells a null (empty) from an empty string ("")."""
    query = "SELECT * FROM VALUES (22, 'a,\"b\"', 'x'), (1, CAST(NULL AS STRING), '') AS t(id, note, e) ORDER BY id"
    result = subprocess.run(
        [sys.executable, "-m", "lakecompact", "sql", "--config", str(minimal_config(tmp_path)), "--format", "csv", query],
        check=False, cwd=ROOT, env=process_env(), capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'id,note,e\n1,,""\n22,"a,""b""",x\n'
    said = result.stderr.splitlines()
    assert said[0] == "2 row(s)" and said[1].startswith("lakecompact sql: finished in "), result.stderr
