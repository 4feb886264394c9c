"""The stack's settings: its ports and addresses (each port movable by an environment variable, read at import
time), its folders under .stack/, the databases' logins, and StackError.

Environment overrides (read at import time):

    LAKECOMPACT_STACK_DIR        state dir (default <project root>/.stack)
    LAKECOMPACT_KAFKA_PORT       19092    LAKECOMPACT_KAFKA_CONTROLLER_PORT 19093
    LAKECOMPACT_CONNECT_PORT     18083    LAKECOMPACT_PG_PORT              15432
    LAKECOMPACT_MARIADB_PORT     13306    LAKECOMPACT_METASTORE_PORT       19083
    LAKECOMPACT_SPARE_METASTORE_PORT 19084 (a second metastore on the same database, for tests that stop one)
    LAKECOMPACT_KAFKA_HEAP / LAKECOMPACT_CONNECT_HEAP   JVM -Xmx (default 512m)
    LAKECOMPACT_METASTORE_HEAP                          JVM -Xmx (default 384m)
    LAKECOMPACT_THRIFTSERVER_PORT 19010  LAKECOMPACT_THRIFTSERVER_HEAP (default 768m)
    LAKECOMPACT_THRIFTSERVER_S3  auto (1: the Thrift server reads s3a:// paths of the stack's S3, with the s3a
                                 jars on its class path; 0: it does not; auto: it does when s3 is up or started
                                 with it)
    LAKECOMPACT_TRINO_PORT       19020    LAKECOMPACT_TRINO_HEAP (default 1G)
    LAKECOMPACT_TRINO_JAVA_HOME  the JDK Trino (server and CLI) runs on, Java 24.0.1 or newer (default: the
                                 one install.sh found, in .stack/jars/trino/java-home); every other service
                                 keeps the machine's java (JAVA_HOME)
    LAKECOMPACT_S3_PORT          19030    LAKECOMPACT_S3_HEAP (default 384m)
    LAKECOMPACT_S3_REQUEST_LOG   1 (0: S3Proxy logs no requests, s3_request_log() is empty)
    LAKECOMPACT_SPARK_MASTER_PORT 19077   LAKECOMPACT_SPARK_MASTER_WEBUI_PORT 19040
    LAKECOMPACT_SPARK_WORKER_PORT 19078   LAKECOMPACT_SPARK_WORKER_WEBUI_PORT 19041 (worker n: + n - 1)
    LAKECOMPACT_SPARK_WORKER_CORES 1      LAKECOMPACT_SPARK_WORKER_MEMORY 2g
    LAKECOMPACT_SPARK_DAEMON_HEAP 256m (the master's and workers' own JVMs)
    LAKECOMPACT_CLUSTER_PYTHON   /nonexistent/python (the workers' and executors' PYSPARK_PYTHON)
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    return int(v) if v else default


STACK_DIR = Path(os.environ.get("LAKECOMPACT_STACK_DIR") or PROJECT_ROOT / ".stack").resolve()
KAFKA_PORT = _env_int("LAKECOMPACT_KAFKA_PORT", 19092)
KAFKA_CONTROLLER_PORT = _env_int("LAKECOMPACT_KAFKA_CONTROLLER_PORT", 19093)
CONNECT_PORT = _env_int("LAKECOMPACT_CONNECT_PORT", 18083)
PG_PORT = _env_int("LAKECOMPACT_PG_PORT", 15432)
MARIADB_PORT = _env_int("LAKECOMPACT_MARIADB_PORT", 13306)
METASTORE_PORT = _env_int("LAKECOMPACT_METASTORE_PORT", 19083)
SPARE_METASTORE_PORT = _env_int("LAKECOMPACT_SPARE_METASTORE_PORT", 19084)
METASTORE_HEAP = os.environ.get("LAKECOMPACT_METASTORE_HEAP", "384m")
THRIFTSERVER_PORT = _env_int("LAKECOMPACT_THRIFTSERVER_PORT", 19010)
THRIFTSERVER_HEAP = os.environ.get("LAKECOMPACT_THRIFTSERVER_HEAP", "768m")
THRIFTSERVER_S3 = os.environ.get("LAKECOMPACT_THRIFTSERVER_S3", "auto")  # auto, 1 or 0
TRINO_PORT = _env_int("LAKECOMPACT_TRINO_PORT", 19020)
TRINO_HEAP = os.environ.get("LAKECOMPACT_TRINO_HEAP", "1G")
TRINO_JAVA_HOME = os.environ.get("LAKECOMPACT_TRINO_JAVA_HOME", "")  # empty: the JDK install.sh recorded
KAFKA_HEAP = os.environ.get("LAKECOMPACT_KAFKA_HEAP", "512m")
CONNECT_HEAP = os.environ.get("LAKECOMPACT_CONNECT_HEAP", "512m")
S3_PORT = _env_int("LAKECOMPACT_S3_PORT", 19030)
S3_HEAP = os.environ.get("LAKECOMPACT_S3_HEAP", "384m")
S3_REQUEST_LOG = os.environ.get("LAKECOMPACT_S3_REQUEST_LOG", "1") != "0"
SPARK_MASTER_PORT = _env_int("LAKECOMPACT_SPARK_MASTER_PORT", 19077)
SPARK_MASTER_WEBUI_PORT = _env_int("LAKECOMPACT_SPARK_MASTER_WEBUI_PORT", 19040)
SPARK_WORKER_PORT = _env_int("LAKECOMPACT_SPARK_WORKER_PORT", 19078)  # worker n: this + n - 1
SPARK_WORKER_WEBUI_PORT = _env_int("LAKECOMPACT_SPARK_WORKER_WEBUI_PORT", 19041)  # worker n: this + n - 1
SPARK_WORKERS = 2
SPARK_WORKER_CORES = _env_int("LAKECOMPACT_SPARK_WORKER_CORES", 1)
SPARK_WORKER_MEMORY = os.environ.get("LAKECOMPACT_SPARK_WORKER_MEMORY", "2g")
SPARK_DAEMON_HEAP = os.environ.get("LAKECOMPACT_SPARK_DAEMON_HEAP", "256m")  # the master's and workers' own JVMs
# the Python the workers (and so the executors they start) see as PYSPARK_PYTHON: none by default
CLUSTER_PYTHON = os.environ.get("LAKECOMPACT_CLUSTER_PYTHON", "/nonexistent/python")

KAFKA_BOOTSTRAP = f"{HOST}:{KAFKA_PORT}"
CONNECT_URL = f"http://{HOST}:{CONNECT_PORT}"
METASTORE_URI = f"thrift://{HOST}:{METASTORE_PORT}"
SPARE_METASTORE_URI = f"thrift://{HOST}:{SPARE_METASTORE_PORT}"
THRIFTSERVER_JDBC_URL = f"jdbc:hive2://{HOST}:{THRIFTSERVER_PORT}/default"
TRINO_URL = f"http://{HOST}:{TRINO_PORT}"
TRINO_CATALOG = "hive"  # the Hive connector's catalog, on the stack's metastore
S3_ENDPOINT = f"http://{HOST}:{S3_PORT}"
S3_BUCKET = "lake"  # created by `up s3`
S3_ACCESS_KEY = "lakecompact"
S3_SECRET_KEY = "lakecompact-secret"
S3_REGION = "us-east-1"
SPARK_MASTER_URL = f"spark://{HOST}:{SPARK_MASTER_PORT}"
SPARK_MASTER_WEBUI_URL = f"http://{HOST}:{SPARK_MASTER_WEBUI_PORT}"

JARS_DIR = STACK_DIR / "jars"
KAFKA_JARS = JARS_DIR / "kafka"
PLUGINS_DIR = JARS_DIR / "connect-plugins"
SPARK_KAFKA_JARS_DIR = JARS_DIR / "spark-kafka"
SPARK_AVRO_JARS_DIR = JARS_DIR / "spark-avro"
JDBC_JARS_DIR = JARS_DIR / "jdbc"  # the source databases' JDBC drivers (`verify`)
METASTORE_JARS = JARS_DIR / "hive-metastore"  # install.sh: jars, home/ (the unpacked tarball), launcher/
METASTORE_HOME = METASTORE_JARS / "home"
METASTORE_LAUNCHER = METASTORE_JARS / "launcher"
TRINO_JARS = JARS_DIR / "trino"  # install.sh: the CLI jar, and home/ (the server with its Hive connector)
TRINO_HOME = TRINO_JARS / "home"
TRINO_JAVA_RECORD = TRINO_JARS / "java-home"  # install.sh: the JDK (Java 24.0.1 or newer) it found for Trino
S3A_JARS_DIR = JARS_DIR / "s3a"  # install.sh: hadoop-aws, the AWS SDK bundle, analyticsaccelerator-s3, spark-hadoop-cloud
S3PROXY_JARS = JARS_DIR / "s3proxy"  # install.sh: s3proxy-<version>-jar-with-dependencies.jar
S3_DIR = STACK_DIR / "s3"  # data/: the filesystem store (one directory per bucket)
CLUSTER_DIR = STACK_DIR / "cluster"  # workN/: worker N's work dir (executors' logs, app files), localN/: scratch
RUN_DIR = STACK_DIR / "run"
LOG_DIR = STACK_DIR / "logs"
CONF_DIR = STACK_DIR / "conf"
MARIADB_DIR = STACK_DIR / "mariadb"
MARIADB_DATA = MARIADB_DIR / "data"
MARIADB_SOCK = RUN_DIR / "mariadb.sock"
KAFKA_DATA = STACK_DIR / "kafka" / "data"

PG_CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
MARIADB_CONNECTOR_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"
CONNECT_GROUP = "lakecompact-connect"


@dataclasses.dataclass(frozen=True)
class DbSettings:
    host: str
    port: int
    user: str
    password: str
    database: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


POSTGRES = DbSettings(HOST, PG_PORT, "lake", "lake", "lake_src")
MARIADB = DbSettings(HOST, MARIADB_PORT, "lake", "lake", "lake_src")
METASTORE_DB = DbSettings(HOST, PG_PORT, "hive", "hive", "metastore")  # the metastore's own tables


class StackError(RuntimeError):
    pass


# what `from stack.settings import *` (the package's __init__) gives: the settings, not this module's imports
__all__ = [name for name in dir() if name.isupper()] + ["DbSettings", "StackError"]
