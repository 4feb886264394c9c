"""Job locks: a lock left by a killed process (or by one of another host whose lease ran out) is taken over with a
warning; a live holder's is never stolen, and a holder renews its lease while it works."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time

import pytest

from lakecompact import config as config_module
from lakecompact.errors import ConfigError, LockHeld
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.storage import exclusive_lock
from tests.support.poll import poll


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


@pytest.mark.parametrize("age_seconds, taken_over", [(3600, True), (5, False)])
def test_an_empty_lock_is_taken_over_only_long_after_it_was_created(lake, capsys, age_seconds, taken_over):
    """A process killed between creating the lock file and writing its name leaves an empty file: nobody's."""
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    storage.write_text(path, "")
    stamp = time.time() - age_seconds
    os.utime(path, (stamp, stamp))
    if taken_over:
        with exclusive_lock(storage, path, "table t is being compacted"):
            assert storage.read_text(path).startswith(f"pid {os.getpid()} on ")
        assert "was left by a process that never wrote its name" in capsys.readouterr().err
    else:  # its creator may be writing its name right now
        with pytest.raises(LockHeld), exclusive_lock(storage, path, "table t is being compacted"):
            pass
        assert storage.read_text(path) == ""


def test_a_state_file_is_replaced_whole_and_leaves_no_scratch_file(lake):
    storage = Catalog(lake.spark, lake.config).storage
    folder = lake.tmp / "warehouse" / "state"
    path = f"{folder}/000000000001.json"
    storage.write_json(path, {"n": 1}, overwrite=True)
    storage.write_json(path, {"n": 2}, overwrite=True)
    assert storage.read_json(path) == {"n": 2}
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".crc")) == ["000000000001.json"]


def _age(path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


@pytest.mark.parametrize("age_seconds, taken_over", [(301, True), (200, False)])
def test_a_lock_of_another_host_is_taken_over_only_when_its_lease_ran_out(lake, capsys, age_seconds, taken_over):
    """Its pid means nothing here; its holder renews the lease (the file's time) while it works."""
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    owner = f"pid 1 on not-{socket.gethostname()} by someone since 2026-01-01 00:00:00Z"
    storage.write_text(path, owner)
    _age(path, age_seconds)
    if taken_over:
        with exclusive_lock(storage, path, "table t is being compacted", lease_seconds=300):
            assert storage.read_text(path).startswith(f"pid {os.getpid()} on ")
        assert f"was left by a process that has not renewed its lease for {age_seconds} s ({owner})" in capsys.readouterr().err
    else:
        with pytest.raises(LockHeld), exclusive_lock(storage, path, "table t is being compacted", lease_seconds=300):
            pass
        assert storage.read_text(path) == owner


def test_a_holder_renews_its_lease_while_it_works(lake):
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    with exclusive_lock(storage, path, "table t is being compacted", lease_seconds=0.4):
        owner = storage.read_text(path)
        _age(path, 3600)
        # touched by the holder's renewal
        poll(lambda: storage.age_seconds(path) < 60, 30, "the lock renewed by its holder", interval=0.05)
        assert storage.read_text(path) == owner  # its name untouched
    assert not storage.exists(path)


def test_the_lease_is_a_setting_checked_when_loaded():
    base = {"warehouse": "/tmp/w", "source": {"paths": ["/tmp/e"]}}
    assert config_module.from_dict(base).locks.lease_seconds == 300
    assert config_module.from_dict({**base, "locks": {"lease_seconds": 60}}).locks.lease_seconds == 60
    with pytest.raises(ConfigError, match="locks.lease_seconds"):
        config_module.from_dict({**base, "locks": {"lease_seconds": 1}})


def test_a_holder_whose_lock_was_taken_over_leaves_the_new_holder_s_lock_alone(lake):
    storage = Catalog(lake.spark, lake.config).storage
    path = f"{lake.tmp}/warehouse/t.lock"
    other = f"pid 1 on not-{socket.gethostname()} by someone since 2026-01-01 00:00:00Z"
    with exclusive_lock(storage, path, "table t is being compacted"):
        storage.write_text(path, other, overwrite=True)  # this holder seemed gone, and another job took over
    assert storage.read_text(path) == other
