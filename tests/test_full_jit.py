"""A one-shot command's JVM compiles with C1 alone, unless the command knows before it starts the JVM that its work is
large enough for the full JIT to pay off (docs/configuration.md "Spark and JVM settings"): `land`, the bytes of
event files it will read (files.unlanded_bytes); `compact`, the rows of increments it will fold in
(status.unfolded_rows: what `status` reports pending)."""

from __future__ import annotations

import pytest

from lakecompact import cli
from lakecompact import config as config_module
from lakecompact import spark as spark_module
from lakecompact.landing import files
from lakecompact.views.status import unfolded_rows
from tests.support.debezium import INT, TEXT, Topic

T = Topic("pg.public.parts", [("id", INT), ("name", TEXT)], ["id"])
U = Topic("pg.public.bins", [("id", INT), ("name", TEXT)], ["id"])


def _events(first: int, count: int, topic: Topic = T) -> list:
    return [topic.event("c", {"id": k, "name": f"part {k}"}, 100 + k) for k in range(first, first + count)]


def test_the_unlanded_bytes_are_the_matching_files_less_what_was_landed_of_each(lake):
    a, b = lake.write(_events(0, 5), name="a.jsonl"), lake.write(_events(5, 3), name="b.jsonl")
    assert files.unlanded_bytes(lake.config) == a.stat().st_size + b.stat().st_size > 0
    lake.land()
    assert files.unlanded_bytes(lake.config) == 0
    landed = a.stat().st_size
    lake.write(_events(8, 2), name="a.jsonl")  # appended, as kcat appends
    assert files.unlanded_bytes(lake.config) == a.stat().st_size - landed > 0


def test_the_unfolded_rows_are_those_of_the_increments_above_each_tables_version(lake):
    lake.write(_events(0, 5) + _events(0, 2, U))
    lake.land()
    lake.write(_events(5, 3))
    lake.land()
    assert unfolded_rows(lake.config) == 10
    assert unfolded_rows(lake.config, ["public_bins"]) == 2
    lake.compact("public_parts")
    assert unfolded_rows(lake.config) == 2  # the bins' increment only
    lake.write(_events(8, 4))
    lake.land()
    assert unfolded_rows(lake.config, ["public_parts"]) == 4
    schemaless = Topic("pg.public.crates", [("id", INT)], ["id"], with_schema=False)
    lake.write([schemaless.event("c", {"id": 1}, 500)], name="crates.jsonl")  # no table: quarantined only
    assert lake.land().quarantined == {"public_crates": 1}
    assert unfolded_rows(lake.config) == 6


def test_what_is_off_the_local_disk_is_not_known_before_a_jvm(tmp_path):
    local = {"warehouse": str(tmp_path / "warehouse"), "source": {"kind": "files", "paths": [str(tmp_path / "*.jsonl")]}}
    assert files.unlanded_bytes(config_module.from_dict(local)) == 0
    assert unfolded_rows(config_module.from_dict(local)) == 0
    kafka = {**local, "source": {"kind": "kafka", "bootstrap_servers": "127.0.0.1:9", "topics": ["t"]}}
    on_s3 = {**local, "warehouse": "s3a://lake/warehouse", "metastore": {"uri": "thrift://127.0.0.1:9"}}
    assert files.unlanded_bytes(config_module.from_dict(kafka)) is None
    assert files.unlanded_bytes(config_module.from_dict(on_s3)) is None
    assert unfolded_rows(config_module.from_dict(on_s3)) is None


def test_the_full_jit_from_the_threshold_on_and_never_for_work_not_known():
    assert spark_module.one_shot_jit(None, 1)
    assert spark_module.one_shot_jit(99, 100)
    assert not spark_module.one_shot_jit(100, 100)


@pytest.mark.parametrize("command,threshold", [("land", "FULL_JIT_EVENT_BYTES"), ("compact", "FULL_JIT_ROWS")])
def test_a_command_asks_for_the_full_jit_only_when_its_work_is_large_enough(lake, monkeypatch, command, threshold):
    handler = next(c.run for c in cli.COMMANDS if c.name == command)

    def run_as_the_command_does() -> cli.Context:
        context = cli.Context(cli._parser().parse_args(["--config", "lake.toml", command]))
        context.__dict__.update(config=lake.config, spark=lake.spark)  # the test's config and its running session
        handler(context.args, context)
        return context

    def write(events: list) -> None:
        lake.write(events)
        if command == "compact":  # its work: the landed increments
            lake.land()

    write(_events(0, 5))
    assert run_as_the_command_does().one_shot  # five events
    write(_events(5, 5))
    monkeypatch.setattr(spark_module, threshold, 1)
    assert not run_as_the_command_does().one_shot
    assert len(lake.view("public_parts")) == 10
    if command == "compact":
        assert unfolded_rows(lake.config) == 0
