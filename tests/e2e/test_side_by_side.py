"""Side by side on the shared Hive metastore (the stack's thrift service, backed by PostgreSQL): a lander and one
compactor per table run at once as separate OS processes, as cron or a scheduler starts them, while event files
arrive with late, duplicate and out-of-order events, deletes and TOAST placeholders; a second compactor of one
table runs alongside the first (and, at the end, for certain while the first holds the table's lock). On the
embedded metastore the same schedule has to wait process by process (tests/test_metastore_guard.py).

The default run has three tables and one round side by side: each process is a driver JVM, and on this machine's
two cores the six processes of a round take about two minutes. Eight tables for three rounds is a soak
(`scripts/test.sh -m soak`, about ten minutes)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.semantics.reference import expected_view
from tests.support.cli import ROOT, read_views
from tests.support.crash import stop_at
from tests.support.databases import database_name, lake_config
from tests.support.source import Source, deliver

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TWICE = "public_t0"  # two compactors at once, every round
LANDED = re.compile(r"^  \S+\.(\w+): (\d+) rows landed in batch (\d+)")
COMPACTED = re.compile(r"^compact (\w+): base v(\d+) -> v(\d+): (\d+) events from")


def start(config: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lakecompact", "--config", str(config), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> list[str]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, f"{process.args[4:]} exited {process.returncode}: {err[-3000:]}"
    return out.splitlines()


@pytest.mark.parametrize("tables, rounds", [(3, 1), pytest.param(8, 3, marks=pytest.mark.soak)])
def test_a_lander_and_per_table_compactors_run_at_once_and_every_view_is_exact(stack, tmp_path, tables, rounds):
    names = {f"public_t{n}": f"side.public.t{n}" for n in range(tables)}
    rng = random.Random(20261124)
    database = database_name()
    config = lake_config(tmp_path, database, stack.METASTORE_URI)
    events = tmp_path / "events"
    sources = {table: Source(topic, rng) for table, topic in names.items()}
    by_topic = {source.topic.name: table for table, source in sources.items()}
    positions = iter(range(95, 100_000, 3))  # LSNs that cross 99 -> 101: compared as numbers
    delivered: Counter = Counter()  # change events per table (tombstones are skipped, not landed)
    landed: Counter = Counter()
    compacted: Counter = Counter()
    batches: Counter = Counter()  # (table, batch) landed
    held_back: list[dict] = []
    sent: list[dict] = []

    def record(lines: list[str]) -> None:
        for line in lines:
            if match := LANDED.match(line):
                landed[match[1]] += int(match[2])
                batches[match[1], int(match[3])] += 1
            elif match := COMPACTED.match(line):
                compacted[match[1]] += int(match[4])

    def next_round(number: int, hold_back: bool) -> None:
        """A file of this round's changes (some held back for the next round when `hold_back`), the last round's
        held-back (late) changes and redeliveries of earlier lines, shuffled."""
        nonlocal held_back, sent
        lines, held_back = held_back, []
        for source in sources.values():
            for key in range(1, 7):
                for _ in range(rng.randint(1, 2)):
                    late = hold_back and rng.random() < 0.15
                    (held_back if late else lines).extend(source.change(key, next(positions)))
        lines += [sources[by_topic[line["topic"]]].redelivered(line, same_offset=rng.random() < 0.5)
                  for line in rng.sample(sent, min(4, len(sent)))]
        rng.shuffle(lines)
        sent += [line for line in lines if line["payload"] is not None]
        delivered.update(by_topic[line["topic"]] for line in lines if line["payload"] is not None)
        deliver(events, f"round-{number}", lines)

    next_round(1, hold_back=True)
    record(finish(start(config, "land")))  # the tables exist from here on: a compactor of an unknown one fails
    for number in range(2, rounds + 2):
        next_round(number, hold_back=number <= rounds)  # the last round holds nothing back
        # all at once: the lander lands the round while the compactors fold in what is registered when they look
        lander = start(config, "land")
        compactors = {table: start(config, "compact", "--table", table) for table in names}
        second = start(config, "compact", "--table", TWICE)
        record(finish(lander))
        outputs = {table: finish(process) for table, process in compactors.items()}
        both = [outputs[TWICE], finish(second)]
        for lines_out in [*outputs.values(), both[1]]:
            record(lines_out)
        # the lock lets one compactor of the table work; the other found it busy (exit 0), or came after it
        for lines_out in both:
            assert any(COMPACTED.match(line) or "skipped, table public_t0 is being compacted" in line
                       or "nothing pending" in line for line in lines_out), lines_out

    # and for certain: a compactor of the table stopped in the middle of its compaction, its lock held, while a
    # second one runs: the second says the table is busy and exits 0; then the first finishes
    last = [line for key in (1, 2) for line in sources[TWICE].change(key, next(positions))]
    delivered.update(TWICE for line in last if line["payload"] is not None)
    deliver(events, "last", last)
    record(finish(start(config, "land")))
    second_out: list[str] = []
    first = stop_at(config, ("compact", "--table", TWICE), "version-written",
                    lambda: second_out.extend(finish(start(config, "compact", "--table", TWICE))))
    assert first.returncode == 0, first.stderr
    assert any(line.startswith(f"compact {TWICE}: skipped, table {TWICE} is being compacted by another job")
               for line in second_out), second_out
    assert any(COMPACTED.match(line) for line in first.stdout.splitlines()), first.stdout
    record(first.stdout.splitlines())

    assert set(batches.values()) == {1}  # no batch of a table landed twice
    assert landed == delivered  # every event landed once: none lost, no batch landed twice
    # and each landed event is either in a base version, once, or still pending (landed after its compactor looked)
    status = subprocess.run([sys.executable, "-m", "lakecompact", "--config", str(config), "status", "--json"],
                            cwd=ROOT, capture_output=True, text=True, check=True)  # files only: no JVM
    pending = {row["table"].split(".")[1]: row["pending_events"] for row in map(json.loads, status.stdout.splitlines())}
    assert compacted + Counter(pending) == delivered
    assert sum(compacted.values()) > 0  # round 1 was compacted side by side with landing round 2
    seen = read_views(config, database, names)
    for table, source in sources.items():
        assert seen[table] == expected_view(source.model), table
