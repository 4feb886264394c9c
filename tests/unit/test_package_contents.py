"""The wheel holds the whole package: every module of every lakecompact package (found, not listed, so a new one
cannot be left out), the SQL templates, the log configuration and the demo's events; and nothing else."""

from __future__ import annotations

import zipfile

from tests.support.wheel import ROOT, build_wheel

PACKAGE, TEMPLATES, EVENTS = ROOT / "lakecompact", ROOT / "sql_templates", ROOT / "examples" / "events"


def _tree() -> set[str]:
    """The installed files the tree says there must be, as paths in the wheel."""
    expected = {f"lakecompact/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")}
    expected |= {f"lakecompact/sql_templates/{p.relative_to(TEMPLATES).as_posix()}"
                 for pattern in ("*.py", "*.j2") for p in TEMPLATES.rglob(pattern)}
    expected |= {f"lakecompact/demo_events/{p.name}" for p in EVENTS.glob("*.jsonl")}
    return expected | {"lakecompact/log4j2.properties"}


def test_the_wheel_holds_every_module_template_and_data_file_of_the_tree_and_nothing_else(tmp_path):
    wheel = zipfile.ZipFile(build_wheel(tmp_path))
    names = set(wheel.namelist())
    tree = _tree()
    assert {"lakecompact/verify/verify.py", "lakecompact/sql_templates/clauses/bucket.sql.j2",
            "lakecompact/demo_events/part-1.jsonl"} <= tree  # the tree is read where it is
    assert {n for n in names if not n.startswith("lakecompact-")} == tree
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "lakecompact = lakecompact.cli:main" in wheel.read(entry_points).decode().splitlines()
