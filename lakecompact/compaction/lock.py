"""One job at a time where it matters (a table's compactor, the lake's lander): an exclusive lock file."""

from __future__ import annotations

import getpass
import os
import socket
from contextlib import contextmanager
from datetime import UTC, datetime

from lakecompact.errors import LockHeld
from lakecompact.storage import Storage


@contextmanager
def exclusive_lock(storage: Storage, path: str, subject: str):
    """`subject` says what the holder does, e.g. "table t is being compacted"."""
    owner = f"pid {os.getpid()} on {socket.gethostname()} by {getpass.getuser()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S}Z"
    try:
        storage.write_text(path, owner, overwrite=False)
    except Exception as exc:  # Hadoop's FileAlreadyExistsException arrives as a Py4J error
        if "already exists" not in str(exc).lower() and not storage.exists(path):
            raise
        try:
            held_by = storage.read_text(path)
        except Exception:
            held_by = "unknown"
        raise LockHeld(subject, path, held_by) from None
    try:
        yield
    finally:
        storage.delete(path)
