"""`lakecompact run` as an operator runs it: one real process lands and compacts two tables on its own while
event files arrive (late, duplicate and out-of-order events, deletes, TOAST placeholders), watched through its
Prometheus endpoint (scraped over HTTP, parsed by the Prometheus client's parser) and its status file, and
stopped by SIGTERM: it exits 0, and every view equals the reference model of the source."""

from __future__ import annotations

import json
import random
import signal
import subprocess

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.semantics.reference import expected_view
from tests.support.cli import minimal_config, read_views, start_run
from tests.support.poll import poll
from tests.support.ports import free_port
from tests.support.source import Source, deliver

pytestmark = pytest.mark.spark

TABLES = {"public_alpha": "run.public.alpha", "public_beta": "run.public.beta"}


def scrape(port: int) -> dict[tuple[str, str], float]:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {(s.name, s.labels.get("table", "")): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def wait_for(condition, what: str, process: subprocess.Popen, timeout: float = 300):
    def gone() -> str | None:
        if process.poll() is None:
            return None
        out, err = process.communicate()
        return f"run exited ({process.returncode}):\n{out[-3000:]}\n{err[-3000:]}"

    return poll(condition, timeout, what, interval=0.5, gone=gone,
                not_yet=(requests.ConnectionError, KeyError))


def settled(port: int, events_in: int) -> dict | None:
    """The scrape once this process has landed `events_in` events and no table has anything pending."""
    scraped = scrape(port)
    landed = scraped[("lakecompact_land_events_total", "")] == events_in
    tables = [f"lake.{t}" for t in TABLES]
    idle = all(scraped[("lakecompact_pending_events", t)] == 0 and scraped[("lakecompact_compacting", t)] == 0
               and scraped[("lakecompact_base_version", t)] >= 1 for t in tables)
    return scraped if landed and idle else None


def test_run_lands_and_compacts_on_its_own_is_watched_and_stops_on_sigterm(tmp_path):
    rng = random.Random(20261123)
    port = free_port()
    config = minimal_config(tmp_path, (
        "[run]\ninterval_seconds = 1\ncompact_after_batches = 1\nparallel_compactions = 2\n"
        f"metrics_port = {port}\n[defaults]\nbuckets = 2\n[spark.conf]\n\"spark.sql.shuffle.partitions\" = \"2\"\n"
    ))
    events = tmp_path / "events"
    events.mkdir()
    sources = {table: Source(topic, rng) for table, topic in TABLES.items()}
    positions = iter(range(95, 10_000, 3))  # LSNs that cross 99 -> 101: compared as numbers

    # wave 1: every key inserted and changed; some changes held back, to arrive after later ones were compacted
    wave1, held_back = [], []
    for source in sources.values():
        for key in range(1, 9):
            changes = [source.change(key, next(positions)) for _ in range(rng.randint(1, 3))]
            for n, lines in enumerate(changes):
                (held_back if n < len(changes) - 1 and rng.random() < 0.3 else wave1).extend(lines)
    rng.shuffle(wave1)
    # wave 2: more changes, out of order, with the held-back (late) lines and redeliveries of wave 1
    wave2 = list(held_back)
    for source in sources.values():
        for key in range(1, 11):
            for _ in range(rng.randint(0, 2)):
                wave2.extend(source.change(key, next(positions)))
    by_topic = {s.topic.name: s for s in sources.values()}
    wave2 += [by_topic[line["topic"]].redelivered(line, same_offset=rng.random() < 0.5)
              for line in rng.sample(wave1, 6)]
    # a table whose events so far are one truncate: held until its key is known, no table yet
    wave2.append(Source("run.public.gamma", rng).topic.event("t", None, next(positions)))
    rng.shuffle(wave2)

    deliver(events, "wave-1", wave1)
    # the first `run` is killed (SIGKILL) by its first compaction that has written its manifest: the next start
    # must finish both half-done compactions, as `compact` would, and go on
    killed = start_run(config, kill_at="manifest")
    out, err = killed.communicate(timeout=300)
    assert killed.returncode == -signal.SIGKILL, err
    killed_lines = out.splitlines()

    process = start_run(config)
    try:
        wait_for(lambda: settled(port, 0), "wave 1 compacted", process)  # the killed process landed it
        status_file = tmp_path / "warehouse" / "lake" / "_state" / "run-status.json"
        status = json.loads(status_file.read_text())
        assert status["state"] == "running" and status["pid"] == process.pid
        assert {t["table"] for t in status["tables"]} == {f"lake.{t}" for t in TABLES}

        deliver(events, "wave-2", wave2)
        second = wait_for(lambda: settled(port, len(wave2)), "wave 2 landed and compacted", process)
        for table in TABLES:
            assert second[("lakecompact_base_version", f"lake.{table}")] >= 2
            assert second[("lakecompact_compactions_total", f"lake.{table}")] >= 1
            assert second[("lakecompact_live_rows", f"lake.{table}")] == len(expected_view(sources[table].model))
            assert second[("lakecompact_source_lag_seconds", f"lake.{table}")] > 0
        assert second[("lakecompact_land_failures_total", "")] == 0
        assert (second[("lakecompact_land_held_total", "")], second[("lakecompact_land_held_landed_total", "")]) == (1, 0)
        assert ("lakecompact_base_version", "lake.public_gamma") not in second
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert "run: SIGTERM: stopping after the current step" in lines
    assert lines[-1].startswith("run: stopped after ")
    assert {f"run: {t}: a compaction was interrupted; finishing it" for t in TABLES} <= set(lines)
    # both tables of the first batch were handed to the compaction pool before either finished
    [first_started, second_started] = [n for n, line in enumerate(killed_lines) if line.startswith("run: compacting ")]
    assert not any(line.startswith("compact ") for line in killed_lines[first_started:second_started])
    assert json.loads(status_file.read_text())["state"] == "stopped"

    # what readers see, through the views, after `run` let go of the metastore
    seen = read_views(config, "lake", TABLES)
    for table, source in sources.items():
        assert seen[table] == expected_view(source.model), table
