"""One process at a time on an embedded (Derby) metastore: a second one waits, or leaves with a clear line.

Derby lets one JVM open its database; a second process would print pages of `Another instance of Derby may
have already booted the database`. So before Spark starts, a process takes an exclusive lock on a file beside
the metastore (`flock`: the kernel releases it when the process ends, even by kill -9) and writes who holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from lakecompact.errors import MetastoreBusy
from lakecompact.report import warn

LOCK_FILE = "lakecompact.lock"
_held: dict[str, int] = {}  # metastore folder -> the open file descriptor holding its lock, for this process


def hold(metastore_dir: Path, *, wait: bool = True, poll_seconds: float = 0.5) -> None:
    """Take the metastore's lock for the rest of this process (again: nothing to do)."""
    key = str(metastore_dir.resolve())
    if key in _held:
        return
    metastore_dir.mkdir(parents=True, exist_ok=True)
    path = metastore_dir / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    told = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _holder(path)
            if not wait:
                os.close(descriptor)
                raise MetastoreBusy(str(metastore_dir), holder) from None
            if not told:
                warn(f"the embedded metastore {metastore_dir} is in use by {holder}; waiting for it to finish "
                     "(--no-wait exits instead; a shared metastore ([metastore] uri) lets jobs run side by side)")
                told = True
            time.sleep(poll_seconds)
    if told:
        warn("the embedded metastore is free; going on")
    owner = {"pid": os.getpid(), "command": " ".join(["lakecompact", *sys.argv[1:]]) if sys.argv else "lakecompact",
             "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")}
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, json.dumps(owner).encode(), 0)
    _held[key] = descriptor


def _holder(path: Path) -> str:
    try:
        owner = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        owner = {}
    if not owner:
        return "another process"
    return f"{owner.get('command', '?')!r} (pid {owner.get('pid', '?')}, since {owner.get('since', '?')})"
