"""`lakecompact run` without Spark: when a table is due for compaction, the Prometheus text it serves (parsed by
the Prometheus client library's own parser), the endpoint over real HTTP, and the `[run]` settings' checks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from lakecompact import config as config_module
from lakecompact.config import RunConfig
from lakecompact.errors import ConfigError, LakecompactError
from lakecompact.service import metrics
from lakecompact.service.policy import compaction_due

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC).timestamp()


def iso(seconds_before_now: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_before_now, UTC).isoformat()


def row(**values) -> dict:
    return {"table": "lake.t", "base_version": 1, "pending_batches": 1, "pending_events": 10,
            "oldest_pending_landed_at": iso(10), "last_compaction": iso(100), **values}


@pytest.mark.parametrize(
    "policy, status, due",
    [
        (RunConfig(compact_after_batches=3), row(pending_batches=3), "3 pending batches"),
        (RunConfig(compact_after_batches=3), row(pending_batches=2), None),
        (RunConfig(compact_after_events=100), row(pending_events=100), "100 pending events"),
        (RunConfig(compact_after_events=100), row(pending_events=None), None),  # not recorded: no trigger
        (RunConfig(compact_after_seconds=60), row(oldest_pending_landed_at=iso(61)), "landed 61s ago"),
        (RunConfig(compact_after_seconds=60), row(oldest_pending_landed_at=iso(59)), None),
        (RunConfig(compact_after_batches=0, compact_after_events=0, compact_after_seconds=0, compact_every_seconds=300),
         row(last_compaction=iso(301)), "scheduled"),
        (RunConfig(compact_after_batches=0, compact_after_events=0, compact_after_seconds=0, compact_every_seconds=300),
         row(last_compaction=iso(299)), None),
        (RunConfig(compact_every_seconds=300), row(last_compaction=None, base_version=0), "scheduled"),  # never yet
        (RunConfig(compact_after_batches=1), row(pending_batches=0, pending_events=0), None),  # nothing pending
    ],
)
def test_a_table_is_due_when_one_trigger_holds(policy, status, due):
    reason = compaction_due(status, policy, NOW)
    assert (reason is None) == (due is None)
    assert due is None or due in reason


SNAPSHOT = {
    "pid": 1, "state": "running", "started_at": iso(600), "updated_at": iso(0),
    "land": {"lands": 7, "failures": 1, "events_in": 120, "rows_out": 99, "quarantined": 3, "skipped": 17,
             "held": 2, "held_landed": 1, "last_at": iso(5), "last_seconds": 2.5},
    "tables": [
        {"table": "lake.orders", "base_version": 4, "base_rows": 90, "live_rows": 80, "pending_batches": 2,
         "pending_events": 20, "quarantined": 3, "last_compaction": iso(300), "last_compaction_seconds": 12.25,
         "last_compaction_rows_written": 40, "oldest_pending_landed_at": iso(120), "last_source_ts": iso(30),
         "verified_at": iso(900), "verify_divergent": 3, "compacting": True, "compactions": 2, "compaction_failures": 0},
        {"table": 'lake.we"ird\\name', "base_version": 0, "base_rows": 0, "live_rows": 0, "pending_batches": 0,
         "pending_events": None, "quarantined": 0, "last_compaction": None, "last_compaction_seconds": None,
         "oldest_pending_landed_at": None, "last_source_ts": None, "compacting": False},
        {"table": "_unknown", "quarantined": 5},  # the events of no table: no table metrics
    ],
}


def samples(text: str) -> dict[tuple[str, str], float]:
    """{(sample name, table label): value}, parsed by prometheus_client (it raises on malformed text)."""
    return {(s.name, s.labels.get("table", "")): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_exposition_is_prometheus_text_with_one_sample_per_table_and_known_value():
    parsed = samples(metrics.exposition(SNAPSHOT, NOW))
    assert parsed[("lakecompact_up", "")] == 1
    assert parsed[("lakecompact_lands_total", "")] == 7
    assert parsed[("lakecompact_land_events_total", "")] == 120
    # in = out + quarantined + skipped + held - held landed
    assert [parsed[(f"lakecompact_land_{name}_total", "")] for name in ("rows", "quarantined", "skipped", "held",
                                                                        "held_landed")] == [99, 3, 17, 2, 1]
    assert parsed[("lakecompact_last_land_duration_seconds", "")] == 2.5
    assert parsed[("lakecompact_pending_events", "lake.orders")] == 20
    assert parsed[("lakecompact_pending_batches", "lake.orders")] == 2
    assert parsed[("lakecompact_source_lag_seconds", "lake.orders")] == pytest.approx(30)
    assert parsed[("lakecompact_oldest_pending_age_seconds", "lake.orders")] == pytest.approx(120)
    assert parsed[("lakecompact_last_compaction_duration_seconds", "lake.orders")] == 12.25
    assert parsed[("lakecompact_last_compaction_timestamp_seconds", "lake.orders")] == pytest.approx(NOW - 300)
    assert parsed[("lakecompact_compacting", "lake.orders")] == 1
    assert parsed[("lakecompact_quarantined_events", "lake.orders")] == 3
    assert parsed[("lakecompact_verify_divergent_keys", "lake.orders")] == 3
    assert parsed[("lakecompact_last_verify_timestamp_seconds", "lake.orders")] == pytest.approx(NOW - 900)
    assert ("lakecompact_verify_divergent_keys", 'lake.we"ird\\name') not in parsed  # never verified: no sample
    # a label with a quote and a backslash comes back as written; an unknown count has no sample
    assert parsed[("lakecompact_base_version", 'lake.we"ird\\name')] == 0
    assert ("lakecompact_pending_events", 'lake.we"ird\\name') not in parsed
    assert ("lakecompact_source_lag_seconds", 'lake.we"ird\\name') not in parsed
    assert not any(label == "_unknown" for _, label in parsed)


def test_the_endpoint_serves_metrics_and_status_over_http():
    server = metrics.serve("127.0.0.1", 0, lambda: SNAPSHOT, lambda: NOW)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        scraped = requests.get(f"{base}/metrics", timeout=10)
        assert scraped.status_code == 200
        assert scraped.headers["Content-Type"] == metrics.PROMETHEUS_CONTENT_TYPE
        assert samples(scraped.text)[("lakecompact_live_rows", "lake.orders")] == 80
        assert requests.get(f"{base}/status", timeout=10).json()["land"]["lands"] == 7
        assert requests.get(f"{base}/nothing", timeout=10).status_code == 404
        with pytest.raises(LakecompactError, match=r"run.metrics_port: cannot listen on 127.0.0.1:\d+"):
            metrics.serve("127.0.0.1", server.server_address[1], lambda: SNAPSHOT, lambda: NOW)
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "run, key, expected",
    [
        ({"interval_seconds": 0}, "run.interval_seconds", "a number of seconds > 0"),
        ({"compact_after_batches": 0, "compact_after_events": 0, "compact_after_seconds": 0},
         "run.compact_after_batches", "at least one trigger above 0"),
        ({"parallel_compactions": 0}, "run.parallel_compactions", "at least 1"),
        ({"metrics_port": 70000}, "run.metrics_port", "a TCP port"),
        ({"interval": 5}, "run.interval", "did you mean 'interval_seconds'"),
    ],
)
def test_run_settings_are_checked_when_loaded(run, key, expected):
    with pytest.raises(ConfigError) as error:
        config_module.from_dict({"warehouse": "/w", "source": {"paths": ["x"]}, "run": run})
    assert str(error.value).startswith(f"{key}:")
    assert expected in str(error.value)


def test_a_failed_steps_error_is_one_line_naming_a_file_that_is_gone():
    """`run` records and prints a failed step in one line: Spark's error for a file a task could not open starts with
    py4j's call line, so the file gone is named as the command line names it (errors.as_missing_file)."""
    from lakecompact.service.loop import _first_line

    task_error = RuntimeError(
        "An error occurred while calling o94.collectToPython.\n"
        ": org.apache.spark.SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file "
        "file:///lake/t/base/v=3/__bucket=1/part-0.parquet. File does not exist.\n\tat org.apache.spark.sql...")
    assert _first_line(task_error, "compact t") == (
        "MissingFile: compact t: a file or folder it was to read is gone (deleted outside lakecompact, or while it "
        "ran): [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file "
        "file:///lake/t/base/v=3/__bucket=1/part-0.parquet. File does not exist.")
    assert _first_line(ValueError("bad value\nmore"), "land") == "ValueError: bad value"
