"""Fixtures for the end-to-end tests (Kafka + Debezium + PostgreSQL + MariaDB + the Hive metastore).

``stack``: the stack package (``stack/`` at the project's root), with the stack up for the whole
session (at the end, what this fixture started is stopped, unless
LAKECOMPACT_KEEP_STACK=1; what already ran when the session began stays up). Skips when
scripts/stack/install.sh has not run, or fails then if
LAKECOMPACT_E2E_REQUIRED=1.

``st``: the stack package with its S3 server and Spark cluster up (`stack.py up s3 cluster`), for a module;
what it started is stopped after the module (unless LAKECOMPACT_KEEP_STACK=1). Skips when the s3 jars are not
installed, or fails then if LAKECOMPACT_E2E_REQUIRED=1.

``e2e_spark``: a session of the suite's one SparkContext (``spark.newSession()``
of tests/conftest.py's ``spark``: the same Hive metastore and jars, its own SQL
settings, so that the e2e settings do not reach the tests run after them), with
Spark's Kafka source (and Avro) jars from .stack/jars.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import stack as stack_package  # the fixtures below are named `stack` and `st`


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: end-to-end tests with Kafka, Debezium, PostgreSQL and MariaDB")


def shared_components(stack) -> list[str]:
    """What the end-to-end tests that run at once share (`--e2e together`): the stack's services, and its S3, Spark
    cluster and a Thrift server that reads s3a:// when the s3 jars are there; none when the stack is not
    installed (its tests skip)."""
    if stack.missing_install():
        return []
    return [*stack.COMPONENTS, *([] if missing_s3_jars(stack) else ["s3", "cluster", "thriftserver"])]


def missing_s3_jars(stack) -> list[str]:
    return [str(d) for d in (stack.S3PROXY_JARS, stack.S3A_JARS_DIR) if not any(d.glob("*.jar"))]


# The modules of the stack's Spark cluster (the `st` fixture): some kill its workers, so they run one after another,
# on one pytest-xdist worker (xdist_scope)
CLUSTER_MODULES = ("test_class_archive_submit.py", "test_cluster_recipe.py", "test_cluster_s3.py",
                   "test_object_store_locks.py", "test_s3_kill9.py", "test_stack_s3_cluster.py")


def xdist_scope(nodeid: str) -> str:
    """What pytest-xdist hands a worker whole (tests/conftest.py's scheduler): a test file, or all of
    CLUSTER_MODULES."""
    path = nodeid.split("::", 1)[0]
    return "the Spark cluster's modules" if Path(path).name in CLUSTER_MODULES else path


def pytest_collection_modifyitems(items):
    strays = sorted({item.path.name for item in items
                     if "st" in getattr(item, "fixturenames", ()) and item.path.name not in CLUSTER_MODULES})
    if strays:
        raise pytest.UsageError(f"{', '.join(strays)} use the Spark cluster (`st`): add them to CLUSTER_MODULES "
                                "in tests/e2e/conftest.py")


@pytest.fixture(scope="session")
def stack():
    st = stack_package
    missing = st.missing_install()
    if missing:
        msg = "e2e stack not installed (missing: " + ", ".join(missing) + "): run scripts/stack/install.sh"
        if os.environ.get("LAKECOMPACT_E2E_REQUIRED") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    # What already ran before this fixture belongs to someone else (a person trying things, another test run
    # in the same tree, the suite's shared metastore): leave it up.
    started = [name for name, info in st.status().items() if name in st.COMPONENTS and not info["ready"]]
    if started:
        st.up()
    yield st
    if os.environ.get("LAKECOMPACT_KEEP_STACK") == "1":
        print("\nleaving the e2e stack running (LAKECOMPACT_KEEP_STACK=1); stop it with: "
              "python scripts/stack/stack.py down")
    elif started:
        st.down(started)


@pytest.fixture(scope="module")
def st():
    stack = stack_package
    missing = missing_s3_jars(stack)
    if missing:
        message = "s3 jars not installed (missing: " + ", ".join(missing) + "): run scripts/stack/install.sh"
        if os.environ.get("LAKECOMPACT_E2E_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    started = [c for c in ("s3", "cluster") if not stack.status()[c]["ready"]]
    if started:
        stack.up(components=started)
    yield stack
    if started and os.environ.get("LAKECOMPACT_KEEP_STACK") != "1":
        stack.down(started)


@pytest.fixture(scope="session")
def e2e_spark(stack, spark):
    """A session of the suite's one SparkContext (Hive support, and the Kafka and Avro jars tests/conftest.py
    gives it) with the e2e tests' own SQL settings: `spark` itself keeps its settings."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
    session = spark.newSession()  # its own SQL conf, temporary views and current database; the same context
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.conf.set("spark.sql.session.timeZone", "UTC")
    # the jars are on the context when tests/conftest.py found them in .stack/jars; a stack elsewhere
    # (LAKECOMPACT_STACK_DIR) has them added here
    have = spark.sparkContext.getConf().get("spark.jars", "")
    for j in stack.spark_kafka_jars() + stack.spark_avro_jars() + stack.jdbc_jars():
        if j not in have:
            session.sql(f"ADD JAR '{j}'")
    # not stopped at the end: that would stop the SparkContext it shares with `spark` (which tests/conftest.py stops)
    return session
