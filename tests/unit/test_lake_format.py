"""A table's lake format (docs/design.md "State files"): a table written in a newer format than this version reads
stops every command that works on it with one line and its own exit status; a table of this version's format, or
one whose state names no format (format 1), is read as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakecompact import cli
from lakecompact.config import from_dict
from lakecompact.errors import LakeFormatTooNew
from lakecompact.lake.catalog import LAKE_FORMAT, Catalog
from lakecompact.lake.model import Field, TableSchema

SCHEMA = TableSchema("orders", "server.public.orders", (Field("id", {"type": "int32"}),), ("id",))


def _lake(tmp_path: Path, lake_format: int | None) -> Path:
    """A config file and a one-table lake whose table state names `lake_format` (None: no format file)."""
    state = tmp_path / "warehouse" / "lake" / SCHEMA.table / "_state"
    (state / "schema").mkdir(parents=True)
    (state / "schema" / f"{SCHEMA.version:012d}.json").write_text(json.dumps(SCHEMA.to_json()))
    if lake_format is not None:
        (state / "format.json").write_text(json.dumps({"format": lake_format}))
    config = tmp_path / "lake.toml"
    config.write_text(f'warehouse = "{tmp_path / "warehouse"}"\ndatabase = "lake"\n'
                      f'[source]\nkind = "files"\npaths = ["{tmp_path / "events"}"]\n')
    return config


def _config(config: Path):
    import tomllib

    return from_dict(tomllib.loads(config.read_text()))


def test_a_table_in_a_newer_lake_format_stops_a_command_with_one_line_and_exit_status_8(tmp_path, capsys):
    config = _lake(tmp_path, LAKE_FORMAT + 1)
    with pytest.raises(LakeFormatTooNew) as caught:
        Catalog(None, _config(config)).require(SCHEMA.table)
    assert caught.value.exit_code == 8

    assert cli.main(["--config", str(config), "history", "--table", SCHEMA.table]) == 8
    captured = capsys.readouterr()
    assert captured.err == (
        f"lakecompact: error: table orders is in lake format {LAKE_FORMAT + 1}, written by a newer lakecompact; this "
        f"version reads format {LAKE_FORMAT} and older: run the lakecompact that wrote it, or a newer one\n")


@pytest.mark.parametrize("lake_format", [None, LAKE_FORMAT])
def test_a_table_of_this_versions_lake_format_or_none_named_is_read(tmp_path, capsys, lake_format):
    config = _lake(tmp_path, lake_format)
    assert Catalog(None, _config(config)).require(SCHEMA.table) == SCHEMA
    assert cli.main(["--config", str(config), "history", "--table", SCHEMA.table, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "error" not in captured.err  # no version yet, and no error
