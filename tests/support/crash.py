"""Simulated crashes: a method made to raise once, in the middle of a land or a compaction, so that a test can
check that the next run finishes (or redoes) what the interrupted one began; and a real process stopped at a
named step while a test changes the world around it (a service stopped)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lakecompact import crashpoints
from tests.support.poll import poll

ROOT = Path(__file__).resolve().parents[2]


class Crash(RuntimeError):
    pass


def crash_once(monkeypatch, owner, name: str, when=lambda *args, **kwargs: True):
    """Make owner.name raise Crash the first time it is called with arguments `when` accepts."""
    original = getattr(owner, name)
    crashed = []

    def patched(*args, **kwargs):
        if not crashed and when(*args, **kwargs):
            crashed.append(True)
            raise Crash(f"simulated crash in {owner.__name__}.{name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)
    return crashed


@contextlib.contextmanager
def killed_after(monkeypatch, step: str) -> Iterator[None]:
    """The block's run dies right after crash point `step` (as a kill -9 there would: what it wrote stays, nothing
    after it runs); the block must die so."""
    reached = crashpoints.reached

    def die_at(name: str) -> None:
        reached(name)
        if name == step:
            raise Crash(f"killed after {step}")

    monkeypatch.setattr(crashpoints, "reached", die_at)
    try:
        with pytest.raises(Crash):
            yield
    finally:
        monkeypatch.setattr(crashpoints, "reached", reached)


def registering(table: str):
    """A `when` for crash_once on Catalog.add_partitions(self, table, partitions): called for `table`."""
    return lambda self, name, *args, **kwargs: name == table


def stopped(process: subprocess.Popen) -> bool:
    """The process stopped itself (SIGSTOP) at its stop point."""
    if process.poll() is not None:
        raise AssertionError(f"exited {process.returncode} before its stop point: {process.communicate()}")
    return Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def stop_at(config: Path, args: tuple[str, ...], step: str, while_stopped: Callable[[], None],
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `lakecompact --config config *args`, stopped at `step` (LAKECOMPACT_STOP_AT) while `while_stopped`
    runs, then continued to its end."""
    env = {**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR", "LAKECOMPACT_STOP_AT": step}
    process = subprocess.Popen([sys.executable, "-m", "lakecompact", "--config", str(config), *args],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        poll(lambda: stopped(process), timeout, f"{args} reaching {step}", interval=0.5)
        while_stopped()
        os.kill(process.pid, signal.SIGCONT)
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)
