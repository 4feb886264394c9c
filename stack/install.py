"""What scripts/stack/install.sh installs, found: the servers' binaries, the jars under .stack/jars for Spark
(Kafka, Avro, JDBC, s3a) and the Spark that lakecompact runs on; missing_install() lists what is not there."""
from __future__ import annotations

import glob
import os
import re
import shutil
import sys
from pathlib import Path

from .processes import run
from .settings import (
    JDBC_JARS_DIR,
    KAFKA_JARS,
    METASTORE_HOME,
    METASTORE_JARS,
    METASTORE_LAUNCHER,
    PLUGINS_DIR,
    S3A_JARS_DIR,
    SPARK_AVRO_JARS_DIR,
    SPARK_KAFKA_JARS_DIR,
    STACK_DIR,
    StackError,
)


def pg_bindir() -> Path:
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(re.search(r"/postgresql/(\d+)/", p).group(1)))
    if cands:
        return Path(cands[-1]).parent
    which = shutil.which("postgres")
    if which:
        return Path(which).resolve().parent
    raise StackError("PostgreSQL server binaries not found: run scripts/stack/install.sh")


def mariadbd() -> str:
    for c in ("mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"):
        p = shutil.which(c) or (c if os.path.exists(c) else None)
        if p:
            return p
    raise StackError("mariadbd not found: run scripts/stack/install.sh")


def jars_ok(d: Path) -> bool:
    return d.is_dir() and any(d.glob("*.jar"))


def missing_install() -> list[str]:
    """What install.sh still has to provide (empty list = installed)."""
    missing = []
    try:
        pg_bindir()
    except StackError:
        missing.append("postgresql")
    try:
        mariadbd()
    except StackError:
        missing.append("mariadb-server")
    for tool in ("mariadb-install-db", "mariadb-admin", "mariadb", "java"):
        if not shutil.which(tool):
            missing.append(tool)
    for d in (KAFKA_JARS, PLUGINS_DIR / "debezium-postgres", PLUGINS_DIR / "debezium-mariadb",
              SPARK_KAFKA_JARS_DIR, JDBC_JARS_DIR, METASTORE_JARS, METASTORE_HOME / "lib", METASTORE_LAUNCHER):
        if not jars_ok(d):
            missing.append(str(d.relative_to(STACK_DIR.parent) if STACK_DIR.parent in d.parents else d))
    return missing


def check_installed() -> None:
    missing = missing_install()
    if missing:
        raise StackError("stack not installed (missing: " + ", ".join(missing)
                         + "): run scripts/stack/install.sh")


def spark_kafka_jars() -> list[str]:
    """Jars for ``spark.jars`` to use ``spark.read.format("kafka")``."""
    return sorted(str(p) for p in SPARK_KAFKA_JARS_DIR.glob("*.jar"))


def spark_avro_jars() -> list[str]:
    """Jars for ``spark.jars`` to use ``format("avro")``."""
    return sorted(str(p) for p in SPARK_AVRO_JARS_DIR.glob("*.jar"))


def jdbc_jars() -> list[str]:
    """Jars for ``spark.jars`` to read PostgreSQL and MariaDB with Spark's JDBC source."""
    return sorted(str(p) for p in JDBC_JARS_DIR.glob("*.jar"))


def s3a_jars() -> list[str]:
    """Jars for ``s3a://`` paths in pyspark: hadoop-aws for pyspark's Hadoop, the AWS SDK v2 bundle and
    analyticsaccelerator-s3 it declares, and spark-hadoop-cloud (PathOutputCommitProtocol,
    BindingParquetOutputCommitter, for the S3A committers). The SDK bundle is ~650 MB: given as ``spark.jars``
    it is copied into every executor's work dir (and once more in local mode); on this machine (local mode, or
    the stack's cluster) put them on ``spark.driver.extraClassPath`` and ``spark.executor.extraClassPath``
    (``":".join(s3a_jars())``) instead."""
    return sorted(str(p) for p in S3A_JARS_DIR.glob("*.jar"))


def spark_home() -> Path:
    """The Spark that lakecompact runs on (the pyspark package: it ships the Thrift server and beeline)."""
    found = run([sys.executable, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"], check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise StackError("pyspark not found: run scripts/setup.sh")
    return Path(found.stdout.strip())
