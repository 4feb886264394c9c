"""The command line's own checks, in process and without Spark (issue 58, "What a new user tripped on"): a bad
argument is refused before a JVM starts, a missing file named on the command line exits 5 whichever option named
it, the common options go before or after the command, and `--version`."""

from __future__ import annotations

import json

import pytest

from lakecompact import __version__
from lakecompact.cli import _parser, main
from tests.support.cli import minimal_config


@pytest.fixture
def no_spark(monkeypatch):
    """Any Spark session asked for fails the test: what is checked here is checked before a JVM starts."""
    def refused(*args, **kwargs):
        raise AssertionError("a Spark session was created")

    monkeypatch.setattr("lakecompact.spark.create_session", refused)


def last_error(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_bad_arguments_are_refused_before_spark_starts(tmp_path, capsys, no_spark):
    config = str(minimal_config(tmp_path))
    value = tmp_path / "value.avsc"
    value.write_text(json.dumps({"type": "record", "name": "Envelope", "fields": []}))

    assert main(["--config", config, "compact", "--table", "nosuch"]) == 2
    assert last_error(capsys) == "lakecompact: error: unknown table 'nosuch'; known tables: none"

    # schema --avsc with --config (no --dry-run): would create the table, so Spark would start, after the checks
    assert main(["--config", config, "schema", "--avsc", str(tmp_path / "gone.avsc"), "--table", "t"]) == 5
    assert last_error(capsys) == (f"lakecompact: error: --avsc {tmp_path / 'gone.avsc'}: expected an Avro schema file "
                                  "(JSON); there is no such file")
    assert main(["--config", config, "schema", "--avsc", str(value)]) == 2
    assert last_error(capsys) == ("lakecompact: error: schema --avsc: expected --table NAME for the table the schema "
                                  "describes")
    assert main(["--config", config, "schema", "--avsc", str(value), "--table", "t",
                 "--key-avsc", str(tmp_path)]) == 5
    assert last_error(capsys) == (f"lakecompact: error: --key-avsc {tmp_path}: expected an Avro schema file (JSON); "
                                  "it cannot be read (IsADirectoryError)")


def test_a_missing_file_named_on_the_command_line_exits_5_whichever_option_named_it(tmp_path, capsys, no_spark):
    gone = tmp_path / "gone.toml"
    assert main(["--config", str(gone), "status"]) == 5
    assert last_error(capsys) == (f"lakecompact: error: --config {gone}: expected a TOML file (see "
                                  "docs/configuration.md); there is no such file")
    assert main(["schema", "--avsc", str(tmp_path / "gone.avsc"), "--table", "t", "--dry-run"]) == 5
    assert main(["--config", str(tmp_path), "status"]) == 5  # a folder: named, but no file to read
    # a config file that is there but wrong stays a config mistake
    bad = tmp_path / "bad.toml"
    bad.write_text("warehouse = [\n")
    assert main(["--config", str(bad), "status"]) == 2


def test_common_options_go_before_or_after_the_command_and_version(capsys):
    parse = _parser().parse_args
    for argv in (["--config", "a.toml", "land", "--dry-run"], ["land", "--config", "a.toml", "--dry-run"],
                 ["land", "--dry-run", "-c", "a.toml"]):
        args = parse(argv)
        assert (args.command, args.config, args.dry_run, args.verbose, args.no_wait) == ("land", "a.toml", True,
                                                                                        False, False), argv
    # given on both sides, the later wins; one given before the command is not reset by the command's parser
    args = parse(["--config", "a.toml", "--no-wait", "status", "--config", "b.toml", "--debug"])
    assert (args.config, args.no_wait, args.debug, args.verbose) == ("b.toml", True, True, False)
    assert parse(["--verbose", "sql", "SELECT 1"]).verbose is True
    assert parse(["sql", "SELECT 1"]).format == "json"

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"lakecompact {__version__}\n"


def test_a_mistake_on_the_command_line_is_one_line_without_the_usage(capsys):
    """An unknown command, a missing or unknown option, a bad value: one line and exit status 2, as any mistake."""
    mistakes = {
        ("--config", "lake.toml", "frobnicate"):
            "lakecompact: error: argument command: invalid choice: 'frobnicate' (choose from 'land', 'run', ",
        ("history",): "lakecompact: error: history: the following arguments are required: --table",
        ("status", "--jsn"): "lakecompact: error: unrecognized arguments: --jsn",
        ("quarantine", "--show", "x"):
            "lakecompact: error: quarantine: argument --show: expected a whole number (0 or more), got 'x'",
    }
    for argv, said in mistakes.items():
        with pytest.raises(SystemExit) as exited:
            main(list(argv))
        assert exited.value.code == 2, argv
        captured = capsys.readouterr()
        [line] = captured.err.splitlines()
        assert line.startswith(said) and captured.out == "", argv
