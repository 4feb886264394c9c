"""The command line: clear errors for a bad config (the helpers of the tests that run `lakecompact` processes are
in tests/support/cli.py; the contract itself, `land|compact|sql|status|views` on one history, is in test_kill9.py:
each process costs a JVM, so one history checks both)."""

from __future__ import annotations

import argparse
import shutil

import pytest

from lakecompact.cli import COMMANDS, _parser, main
from lakecompact.errors import MissingFile, as_missing_file
from tests.support.cli import ROOT, lakecompact, minimal_config
from tests.support.poll import poll


@pytest.mark.parametrize(
    "extra, section, key, expected",
    [
        ("[defaults]\nbuckets = \"eight\"\n", "", "defaults.buckets", "a whole number"),
        ("", 'path = ["/tmp/x/*.jsonl"]\n', "source.path", "paths"),  # unknown key: the close one is named
        ("databse = \"lake\"\n", "", "databse", "database"),
    ],
    ids=["wrong-type", "unknown-key-in-section", "unknown-top-level-key"],
)
def test_bad_config_exits_non_zero_naming_the_key(tmp_path, extra, section, key, expected):
    config = minimal_config(tmp_path, extra)
    if section:
        config.write_text(config.read_text() + section)
    result = lakecompact(config, "status")
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("lakecompact: error:"), result.stderr
    assert key in message and expected in message, message
    assert "Traceback" not in result.stderr


def test_java_options_the_jvm_refuses_are_one_line_naming_them(tmp_path, monkeypatch):
    """The JVM prints why (a thread stack size it cannot read here), then exits before Spark's gateway answers:
    one line of ours names the option given, no Python traceback; given in spark-defaults.conf, it names that."""
    config = minimal_config(tmp_path, '[spark.conf]\n"spark.driver.extraJavaOptions" = "-Xss1q"\n')
    result = lakecompact(config, "sql", "SELECT 1")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Invalid thread stack size: -Xss1q" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "lakecompact: error: the Spark driver's JVM exited as it started (its own message is above): expected Java "
        "options and memory it accepts in [spark.conf] (spark.driver.extraJavaOptions = '-Xss1q' there)")

    site = tmp_path / "spark-conf"
    site.mkdir()
    (site / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Xss2q\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(site))
    result = lakecompact(minimal_config(tmp_path), "sql", "SELECT 1")
    assert result.returncode == 2 and "Invalid thread stack size: -Xss2q" in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "lakecompact: error: the Spark driver's JVM exited as it started (its own message is above): expected Java "
        f"options and memory it accepts in {site / 'spark-defaults.conf'} (spark.driver.extraJavaOptions = '-Xss2q' there)")


def test_a_query_of_a_table_that_is_not_there_is_one_line(tmp_path, monkeypatch):
    """Not also PySpark's log of the error, a JSON record with the JVM's stack trace. And the process leaves no
    folder behind in the temporary folders, the JVM's or Python's (Hive's session makes one for its resources)."""
    java_tmp, python_tmp = tmp_path / "java-tmp", tmp_path / "python-tmp"
    java_tmp.mkdir(), python_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(python_tmp))
    config = minimal_config(tmp_path, f'[spark.conf]\n"spark.driver.extraJavaOptions" = "-Djava.io.tmpdir={java_tmp}"\n')
    result = lakecompact(config, "sql", "SELECT * FROM lake.nope")
    assert result.returncode == 4, result.stderr  # QueryError
    said = result.stderr.splitlines()
    assert len(said) == 1 and said[0].startswith("lakecompact: error: sql: [TABLE_OR_VIEW_NOT_FOUND] The table or "
                                                 "view `lake`.`nope` cannot be found."), result.stderr

    def left() -> list[str]:
        return sorted(p.name for p in [*java_tmp.iterdir(), *python_tmp.iterdir()] if p.is_dir())

    # Spark deletes its own folders (spark-*, blockmgr-*) as its JVM shuts down, which can end after the command's
    # Python process has: what is still there after that is left for good
    poll(lambda: left() == [], 60, "the temporary folders left empty", interval=0.2,
         detail=lambda: f"still there: {left()}")


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_explains_itself_its_options_and_an_example(command, capsys):
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    spec = next(c for c in COMMANDS if c.name == command)
    assert " ".join(spec.help.split()) in " ".join(out.split())  # argparse wraps lines
    assert out.split("example:\n", 1)[1].strip() == spec.example
    assert spec.example.startswith("lakecompact ") and f" {command}" in spec.example
    [subcommands] = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    options = [a for a in subcommands.choices[command]._actions if a.option_strings and a.dest != "help"]
    assert all(a.help for a in options), [a.dest for a in options if not a.help]


def test_landing_one_table_from_files_is_refused_in_one_line_before_a_jvm_starts(tmp_path):
    result = lakecompact(minimal_config(tmp_path), "land", "--table", "public_items", "--dry-run")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lakecompact: error: land --table: the files source lands each file's new lines together")
    assert 'expected source.kind = "kafka"' in line


def test_sparks_errors_for_a_file_that_is_gone_are_one_line(spark, tmp_path):
    """Spark's error for a folder gone when a read is planned, and for a file gone when a task opens it (a
    Py4JJavaError, no condition of its own) become one line, exit 7 (cli.main maps Spark's exceptions so)."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as planned:
        spark.read.parquet(str(tmp_path / "gone"))
    spark.range(3).coalesce(1).write.parquet(str(tmp_path / "written"))
    frame = spark.read.parquet(str(tmp_path / "written"))
    [part] = (tmp_path / "written").glob("*.parquet")
    part.unlink()
    with pytest.raises(Exception) as opened:
        frame.collect()
    said = [as_missing_file(planned.value, "compact"), as_missing_file(opened.value, "compact")]
    assert all(isinstance(error, MissingFile) and error.exit_code == 7 and "\n" not in str(error) for error in said)
    assert str(said[0]).startswith("compact: a file or folder it was to read is gone (deleted outside lakecompact, "
                                   "or while it ran): [PATH_NOT_FOUND] Path does not exist: ")
    assert str(tmp_path / "gone") in str(said[0])
    assert "[FAILED_READ_FILE.FILE_NOT_EXIST]" in str(said[1]) and part.name in str(said[1])
    assert as_missing_file(ValueError("[PATH_NOT_FOUND"), "compact") is None


def test_land_dry_run_says_nothing_was_written_and_the_jvm_prints_no_warning(tmp_path):
    """The last line says it was a dry run; stderr holds that line alone: not the JVM's incubator-module warning,
    which every Spark command printed (lakecompact/spark.py INCUBATOR_WARNING)."""
    (tmp_path / "events").mkdir()
    shutil.copy(ROOT / "examples" / "events" / "part-1.jsonl", tmp_path / "events")
    result = lakecompact(minimal_config(tmp_path), "land", "--dry-run")
    assert result.returncode == 0, result.stderr
    *tables, said = result.stdout.splitlines()
    assert tables == ["  lake.public_customers (a new table) <- dbserver1.public.customers: 7 events (1 Kafka tombstones)",
                      "  lake.shop_orders (a new table) <- mysqlserver.shop.orders: 5 events (0 Kafka tombstones)"]
    assert said.startswith("land --dry-run: batch 1 would read 12 events; nothing written, in ")
    [line] = result.stderr.splitlines()
    assert line.startswith("lakecompact land --dry-run: finished in ") and line.endswith(", nothing written")
