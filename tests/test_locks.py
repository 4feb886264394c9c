"""Job locks: a lock left by a killed process is taken over with a warning; a live holder's is never stolen."""

from __future__ import annotations

import getpass
import socket
import subprocess

import pytest

from lakecompact.catalog import Catalog
from lakecompact.errors import LockHeld
from lakecompact.storage import exclusive_lock


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_lock_of_a_process_that_is_gone_is_taken_over(lake, capsys):
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    storage.write_text(path, f"pid {_dead_pid()} on {socket.gethostname()} by {getpass.getuser()} since 2026-01-01 00:00:00Z")
    with exclusive_lock(storage, path, "table t is being compacted"):
        assert storage.read_text(path).startswith(f"pid {__import__('os').getpid()} on ")
    assert "was left by a process that is gone" in capsys.readouterr().err
    assert not storage.exists(path)


@pytest.mark.parametrize("holder", ["this host, alive", "another host"])
def test_a_live_or_foreign_holder_is_never_stolen(lake, holder):
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    if holder == "another host":
        owner = f"pid {_dead_pid()} on not-{socket.gethostname()} by someone since 2026-01-01 00:00:00Z"
    else:
        owner = f"pid 1 on {socket.gethostname()} by root since 2026-01-01 00:00:00Z"  # init: always alive
    storage.write_text(path, owner)
    with pytest.raises(LockHeld) as caught, exclusive_lock(storage, path, "table t is being compacted"):
        pass
    assert owner in str(caught.value)
    assert storage.read_text(path) == owner
