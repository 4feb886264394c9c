"""Job locks on an object store (the stack's S3: s3proxy 4, whose If-None-Match is atomic), through lakecompact's
own Storage and exclusive_lock in a local[1] session of its own (the s3a jars on its class path): a second job
is refused while the first holds the lock; the holder renews its lease without setTimes (each renewal a new
object created only if it does not exist); a lock of another host is taken over only once its lease ran out;
a live one never; and a store that will not take conditional writes is one clear line at the first lock."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.e2e.support.s3_spark import result_of, s3a_conf, spark_env

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

SCRIPT = """\
import json, socket, sys, time
from pyspark.sql import SparkSession
from lakecompact.errors import LakecompactError, LockHeld
from lakecompact.lake.storage import Storage, exclusive_lock, lock_holder

builder = SparkSession.builder.master("local[1]").appName("object-store-locks")
for key, value in json.loads(sys.argv[2]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
root = sys.argv[1]
storage = Storage(spark, root)
result = {}

def numbers(path):
    return [n for n in storage.list_names(path) if n.isdigit()]

def wait(condition, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()

if sys.argv[3] == "refused":
    try:
        with exclusive_lock(storage, f"{root}/refused.lock", "table t is being compacted"):
            result["held"] = True
    except LakecompactError as error:
        result["error"] = str(error)
    print("RESULT " + json.dumps(result), flush=True)
    sys.exit(0)

path = f"{root}/t.lock"
with exclusive_lock(storage, path, "table t is being compacted", lease_seconds=0.4):
    owner = lock_holder(storage, path)
    result["owner"] = owner
    try:
        with exclusive_lock(storage, path, "table t is being compacted"):
            result["second"] = "held"
    except LockHeld as busy:
        result["second"] = str(busy)
    first = numbers(path)
    result["renewed"] = wait(lambda: numbers(path) and int(numbers(path)[-1]) > int(first[-1]) + 2)
    result["holder_after_renewals"] = lock_holder(storage, path)
    result["objects_while_held"] = len(numbers(path))
result["after_release"] = lock_holder(storage, path)

foreign = f"pid 1 on not-{socket.gethostname()} by someone since 2026-01-01 00:00:00Z"
for name, lease in (("live", 300), ("stale", 1)):
    other = f"{root}/{name}.lock"
    result[f"{name}_created"] = storage.create_exclusive(f"{other}/000000000001", foreign)
    result[f"{name}_again"] = storage.create_exclusive(f"{other}/000000000001", "another")
    if name == "stale":
        wait(lambda: storage.age_seconds(f"{other}/000000000001") > 2.5, 30)
    try:
        with exclusive_lock(storage, other, "table t is being compacted", lease_seconds=lease):
            result[name] = lock_holder(storage, other)
    except LockHeld as busy:
        result[name] = "busy: " + str(busy)
print("RESULT " + json.dumps(result), flush=True)
"""


def _run(st, tmp_path, mode: str, **conf: str) -> tuple[dict, str]:
    script = tmp_path / "locks.py"
    script.write_text(SCRIPT)
    root = f"s3a://{st.S3_BUCKET}/locks-{uuid.uuid4().hex[:10]}"
    run = subprocess.run([sys.executable, str(script), root, json.dumps({**s3a_conf(st), **conf}), mode],
                         capture_output=True, text=True, env=spark_env(), cwd=tmp_path, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    return result_of(run.stdout), run.stderr


def test_locks_on_an_object_store_are_exclusive_renewed_and_taken_over_only_when_stale(st, tmp_path):
    result, stderr = _run(st, tmp_path, "locks")
    assert result["owner"].startswith("pid ")
    assert result["second"].startswith("table t is being compacted") and result["owner"] in result["second"]
    assert result["renewed"] is True  # new objects, each created only if none was there
    assert result["holder_after_renewals"] == result["owner"]
    assert result["objects_while_held"] <= 2  # the numbers below the current one go
    assert result["after_release"] is None
    assert (result["live_created"], result["live_again"]) == (True, False)  # If-None-Match: * is honoured
    assert result["live"].startswith("busy: ") and "not-" in result["live"]
    assert result["stale"].startswith("pid ")  # taken over, by this process
    assert "has not renewed its lease for" in stderr and "taking it over" in stderr


def test_a_store_without_conditional_writes_is_one_clear_line(st, tmp_path):
    result, _ = _run(st, tmp_path, "refused", **{"spark.hadoop.fs.s3a.create.conditional.enabled": "false"})
    assert "held" not in result
    assert result["error"].startswith("the object store of s3a://") and "does not take conditional writes" in result["error"]
    assert "\n" not in result["error"]
