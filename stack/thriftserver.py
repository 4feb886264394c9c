"""Spark's Thrift JDBC/ODBC server (the HiveServer2 protocol) on the stack's metastore, for beeline and BI tools;
it reads s3a:// tables of the stack's S3 too when started to (LAKECOMPACT_THRIFTSERVER_S3)."""
from __future__ import annotations

import os
import re

from .component import Component
from .install import s3a_jars, spark_home
from .processes import cmdline, log, port_answers, run, service_marker, spawn, write_common_conf
from .s3 import SERVICE as S3
from .s3 import s3_spark_conf
from .settings import (
    CONF_DIR,
    HOST,
    LOG_DIR,
    METASTORE_URI,
    S3A_JARS_DIR,
    STACK_DIR,
    THRIFTSERVER_HEAP,
    THRIFTSERVER_JDBC_URL,
    THRIFTSERVER_PORT,
    THRIFTSERVER_S3,
    StackError,
)


def wants_s3(s3_wanted: bool) -> bool:
    """Whether the Thrift server is to read s3a:// paths (LAKECOMPACT_THRIFTSERVER_S3; auto: when the stack's S3 is
    started with it, or runs)."""
    if THRIFTSERVER_S3 in ("0", "1"):
        return THRIFTSERVER_S3 == "1"
    if THRIFTSERVER_S3 != "auto":
        raise StackError(f"LAKECOMPACT_THRIFTSERVER_S3={THRIFTSERVER_S3!r}: expected auto, 1 or 0")
    return s3_wanted or S3.pid() is not None


def _s3_args() -> list[str]:
    """spark-submit arguments for s3a:// on the stack's S3: the s3a jars on the driver's class path (local[2]: its
    tasks run in the driver's JVM; given as --jars, the ~650 MB SDK bundle would be copied), and s3_spark_conf()."""
    jars = s3a_jars()
    if not jars:
        raise StackError(f"the Thrift server is to read s3a:// (LAKECOMPACT_THRIFTSERVER_S3={THRIFTSERVER_S3}), but no "
                         f"s3a jars are in {S3A_JARS_DIR}: run scripts/stack/install.sh")
    args = ["--driver-class-path", ":".join(jars)]
    for key, value in s3_spark_conf().items():
        args += ["--conf", f"{key}={value}"]
    return args


class ThriftServer(Component):
    """spark-submit of HiveThriftServer2 on local[2], pyspark's own Spark."""

    name, title = "thriftserver", "Spark's Thrift server"

    @property
    def address(self) -> str:
        return THRIFTSERVER_JDBC_URL

    def start(self, s3: bool = False) -> bool:
        """Needs the metastore ready. `s3`: with the s3a client and the stack's S3 settings (_s3_args)."""
        if self.pid():
            return False
        write_common_conf()
        work = STACK_DIR / "thriftserver"
        work.mkdir(parents=True, exist_ok=True)
        log(f"starting Spark's Thrift server on {THRIFTSERVER_JDBC_URL}" + (" (reads s3a://)" if s3 else ""))
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--name", "lakecompact-thriftserver", "--master", "local[2]", "--driver-memory", THRIFTSERVER_HEAP,
            "--driver-java-options",
            f"{service_marker('thriftserver')} -Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
            "--conf", "spark.sql.catalogImplementation=hive",
            "--conf", f"spark.hadoop.hive.metastore.uris={METASTORE_URI}",
            "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.driver.bindAddress={HOST}", "--conf", f"spark.driver.host={HOST}",
            "--conf", "spark.sql.session.timeZone=UTC",
            "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
            "--hiveconf", f"hive.server2.thrift.port={THRIFTSERVER_PORT}",
            *(_s3_args() if s3 else []),
            "spark-internal",
        ]
        spawn("thriftserver", command, env={**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_LOG_DIR": str(LOG_DIR)})
        return True

    def ready(self) -> bool:
        """The port answers: HiveServer2 opens it once its Spark session is up."""
        return port_answers(THRIFTSERVER_PORT)


SERVICE = ThriftServer()


def thriftserver_reads_s3() -> bool:
    """Whether the running Thrift server was started to read s3a:// paths (False when it does not run)."""
    pid = SERVICE.pid()
    return bool(pid) and "spark.hadoop.fs.s3a.endpoint=" in cmdline(pid)


def stop_thriftserver(timeout: float = 60) -> None:
    SERVICE.stop(timeout)


def beeline(sql: str, timeout: float = 300) -> list[list[str]]:
    """Rows of a query run by beeline (Hive's JDBC command-line client) through the Thrift server: tab-separated
    values (NULL as the text NULL), so no value may hold a tab or a line break."""
    found = run([str(spark_home() / "bin" / "beeline"), "-u", THRIFTSERVER_JDBC_URL, "-n", "lakecompact",
                  "--silent=true", "--showHeader=false", "--outputformat=tsv2", "-e", sql],
                 input="", check=False, timeout=timeout)
    if found.returncode != 0:
        raise StackError(f"beeline exited {found.returncode}: {(found.stderr or found.stdout)[-2000:]}")
    # beeline prints its prompt before the first row even when silent
    text = re.sub(r"^\d+: jdbc:hive2://\S*> ", "", found.stdout)
    return [line.split("\t") for line in text.splitlines() if line]
