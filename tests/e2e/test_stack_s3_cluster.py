"""The stack's S3 server and Spark cluster (`stack.py up s3 cluster`): S3Proxy refuses conditional PUTs whose
condition fails (412), atomically for If-None-Match: *, over plain HTTP and through Hadoop's S3A client in
PySpark; a spark-submit to the standalone cluster writes and reads parquet on s3a:// with executors that have
no Python; and a job whose worker is killed (kill -9, with its executor) mid-job still ends with the right rows,
the other worker rerunning the lost tasks.

Each Spark run is a process of its own (a local[1] session, or spark-submit in client mode) with the s3a jars on
its class path, so that the suite's one SparkContext is left alone.
"""
from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import uuid

import pytest

from tests.e2e.support.s3_spark import result_of, s3a_conf, spark_env, spark_submit

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

RUN = uuid.uuid4().hex[:10]  # this run's prefix in the bucket


# ----------------------------------------------------------------------------------------------------------
LOCAL_SESSION = """\
import json, sys
from pyspark.sql import SparkSession

builder = SparkSession.builder.master("local[1]").appName("s3-conditional-create")
for key, value in json.loads(sys.argv[2]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
jvm = spark._jvm
path = jvm.org.apache.hadoop.fs.Path(sys.argv[1])
fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
CONDITIONAL = "fs.option.create.conditional.overwrite"

def create(text):
    out = fs.createFile(path).overwrite(False).must(CONDITIONAL, True).build()
    out.write(bytearray(text.encode()))
    out.close()  # the PUT, with If-None-Match: *

result = {"capability": fs.hasPathCapability(path, CONDITIONAL)}
create("first")
result["read"] = [row.value for row in spark.read.text(sys.argv[1]).collect()]
try:
    create("second")
    result["second"] = "written"
except Exception as error:
    result["second"] = error.java_exception.toString()
result["after"] = [row.value for row in spark.read.text(sys.argv[1]).collect()]
print("RESULT " + json.dumps(result), flush=True)
"""


def test_conditional_create_through_s3a_in_pyspark(st, tmp_path):
    key = f"{RUN}/s3a/marker.txt"
    url = f"s3a://{st.S3_BUCKET}/{key}"
    script = tmp_path / "session.py"
    script.write_text(LOCAL_SESSION)
    conf = s3a_conf(st)
    run = subprocess.run([sys.executable, str(script), url, json.dumps(conf)], check=False, capture_output=True, text=True,
                         env=spark_env(), cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    result = result_of(run.stdout)
    assert result["capability"] is True
    assert result["read"] == ["first"]
    # the second conditional create of the key is refused by S3 (412), and the object is left as it was
    assert "RemoteFileChangedException" in result["second"] and "412" in result["second"], result["second"]
    assert result["after"] == ["first"]
    # the same at the HTTP level: an If-None-Match: * PUT on the existing key, and If-Match with another ETag
    assert st.s3_request("PUT", key, data=b"third", headers={"If-None-Match": "*"}).status_code == 412
    assert st.s3_request("PUT", key, data=b"third", headers={"If-Match": '"0123456789abcdef"'}).status_code == 412
    got = st.s3_request("GET", key)
    assert (got.status_code, got.content) == (200, b"first")
    # what S3A sent: the conditional PUTs of the key, each with If-None-Match: *
    puts = [r for r in st.s3_request_log() if r.key == key and r.op == "PutObject"]
    assert [r.headers.get("if-none-match") for r in puts] == ["*", "*", "*", None]


def test_conditional_puts_over_http(st):
    key = f"{RUN}/http/object"
    created = st.s3_request("PUT", key, data=b"v1", headers={"If-None-Match": "*"})
    assert created.status_code == 200
    etag = created.headers["ETag"]
    mark = st.s3_request_log_mark()
    assert st.s3_request("PUT", key, data=b"v2", headers={"If-None-Match": "*"}).status_code == 412
    assert st.s3_request("PUT", key, data=b"v2", headers={"If-Match": '"ffffffffffffffffffffffffffffffff"'}).status_code == 412
    replaced = st.s3_request("PUT", key, data=b"v3", headers={"If-Match": etag})
    assert replaced.status_code == 200 and replaced.headers["ETag"] != etag
    assert st.s3_request("PUT", key, data=b"v4", headers={"If-Match": etag}).status_code == 412  # the old ETag
    assert st.s3_request("PUT", f"{key}-absent", data=b"x", headers={"If-Match": etag}).status_code == 404
    assert st.s3_request("GET", key).content == b"v3"
    copied = st.s3_request("PUT", f"{key}-copy", headers={"x-amz-copy-source": f"/{st.S3_BUCKET}/{key}"})
    assert copied.status_code == 200 and st.s3_request("GET", f"{key}-copy").content == b"v3"

    # If-None-Match: * is atomic: of 8 writers racing to create one key, exactly one wins, each time
    def race(n: int) -> list[int]:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda w: st.s3_request("PUT", f"{RUN}/race/{n}", data=b"w%d" % w * 4096,
                                                         headers={"If-None-Match": "*"}).status_code, range(8)))
    for n in range(5):
        codes = race(n)
        assert sorted(codes) == [200] + [412] * 7, codes

    log = st.s3_request_log(since=mark)
    ops = [(r.op, r.key) for r in log if r.key.startswith(f"{RUN}/http/")]
    assert ops == [("PutObject", key)] * 4 + [("PutObject", f"{key}-absent"), ("GetObject", key),
                                              ("CopyObject", f"{key}-copy"), ("GetObject", f"{key}-copy")]
    [copy] = [r for r in log if r.op == "CopyObject"]
    assert copy.copy_source == f"/{st.S3_BUCKET}/{key}"
    assert sum(r.op == "PutObject" and r.key.startswith(f"{RUN}/race/") for r in log) == 40


# ----------------------------------------------------------------------------------------------------------
CLUSTER_JOB = """\
import json, sys
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.appName("s3-cluster-job").getOrCreate()
print("APP " + spark.sparkContext.applicationId, flush=True)
out, rows, partitions, sleep_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
df = spark.range(0, rows, 1, partitions).selectExpr("id", "id % 7 AS k", "concat('row-', id) AS s")
if sleep_ms:  # each row takes sleep_ms on its executor (no Python: a JVM call)
    df = df.withColumn("slept", F.expr(f"reflect('java.lang.Thread', 'sleep', CAST({sleep_ms} AS BIGINT))"))
df.write.mode("overwrite").parquet(out)
back = spark.read.parquet(out)
result = {"count": back.count(), "ids": sorted(r.id for r in back.select("id").collect()),
          "by_k": sorted([r.k, r["count"]] for r in back.groupBy("k").count().collect()),
          "s": sorted(r.s for r in back.where("id < 3").collect()),
          "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1}
if sys.argv[5:] == ["udf"]:  # no Python on the executors: a Python UDF cannot run there
    try:
        spark.range(2).select(F.udf(lambda x: x + 1, "long")("id")).collect()
        result["udf"] = "ran"
    except Exception as error:
        text = str(error)
        result["udf"] = "cannot run /nonexistent/python" if 'Cannot run program "/nonexistent/python"' in text else text
print("RESULT " + json.dumps(result), flush=True)
"""


def _worker_executors(stack, n: int, app: str) -> list[dict]:
    """The executors (running and finished) worker n ran for application ``app``, from its web UI's JSON."""
    import requests

    state = requests.get(f"http://127.0.0.1:{stack.SPARK_WORKER_WEBUI_PORT + n - 1}/json/", timeout=5).json()
    return [e for e in state.get("executors", []) + state.get("finishedexecutors", []) if e.get("appid") == app]


def test_spark_submit_writes_parquet_on_s3a_without_python_on_executors(st, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(CLUSTER_JOB)
    out = f"s3a://{st.S3_BUCKET}/{RUN}/cluster/table"
    run = subprocess.run(spark_submit(st, script, out, "1000", "4", "0", "udf"),
                         check=False, capture_output=True, text=True, env=spark_env(), cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    result = result_of(run.stdout)
    assert result["count"] == 1000 and result["ids"] == list(range(1000))
    assert result["by_k"] == [[k, len(range(k, 1000, 7))] for k in range(7)]
    assert result["s"] == ["row-0", "row-1", "row-2"]
    assert result["executors"] == 2
    # the executors' PYSPARK_PYTHON points nowhere, and the DataFrame work above needed none
    assert result["udf"] == "cannot run /nonexistent/python", result["udf"][-3000:]
    app = next(line.split()[1] for line in run.stdout.splitlines() if line.startswith("APP "))
    assert all(_worker_executors(st, n, app) for n in (1, 2))  # both workers ran an executor of it
    listed = st.s3_request("GET", params={"list-type": "2", "prefix": f"{RUN}/cluster/table/"})
    assert listed.status_code == 200 and listed.text.count(".parquet</Key>") == 4


def test_job_survives_a_killed_worker(st, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(CLUSTER_JOB)
    out = f"s3a://{st.S3_BUCKET}/{RUN}/killed/table"
    rows, partitions = 24, 8  # 8 tasks of 3 rows of 0.5 s each: ~6 s on the two 1-core workers
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with open(stdout, "w") as out_file, open(stderr, "w") as err_file:
        job = subprocess.Popen(spark_submit(st, script, out, str(rows), str(partitions), "500"),
                               stdout=out_file, stderr=err_file, env=spark_env(), cwd=tmp_path)
    try:
        app = st.poll(lambda: next((line.split()[1] for line in stdout.read_text().splitlines()
                                    if line.startswith("APP ")), None), 120, "the job's application id",
                      fail_fast=lambda: job.poll() is not None and f"spark-submit exited {job.returncode}")

        def running_on_worker1() -> bool:  # its executor has started a task of the job
            logs = (st.CLUSTER_DIR / "work1" / app).glob("*/stderr")
            return any("Running task" in log.read_text(errors="replace") for log in logs)

        st.poll(running_on_worker1, 120, "a task of the job on worker 1",
                fail_fast=lambda: job.poll() is not None and f"spark-submit exited {job.returncode}")
        st.kill_worker(1)
        assert job.wait(timeout=240) == 0, stderr.read_text()[-4000:]
    finally:
        if job.poll() is None:
            job.kill()
        st.start_worker(1)
    result = result_of(stdout.read_text())
    assert result["count"] == rows and result["ids"] == list(range(rows))  # every row once: no lost or doubled task
    assert result["by_k"] == [[k, len(range(k, rows, 7))] for k in range(7)]
    assert result["executors"] == 1  # only worker 2's executor was left
    driver_log = stderr.read_text()
    assert "Lost executor" in driver_log or "ExecutorLostFailure" in driver_log  # the kill hit running tasks
    assert sorted(st.alive_worker_ports()) == [st.SPARK_WORKER_PORT, st.SPARK_WORKER_PORT + 1]
