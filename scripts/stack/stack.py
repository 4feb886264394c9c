#!/usr/bin/env python3
"""Local end-to-end stack for lakecompact: PostgreSQL + MariaDB + Kafka (KRaft)
+ Kafka Connect with Debezium + a Hive metastore thrift service (backed by the
stack's PostgreSQL), all on 127.0.0.1, all state under .stack/.

CLI::

    python scripts/stack/stack.py up|down|status [COMPONENT...]
    python scripts/stack/stack.py connect-pg|connect-mariadb

Components: postgres, mariadb, kafka, connect, metastore (default: all), and
thriftserver, started only when named: Spark's Thrift JDBC/ODBC server (HiveServer2
protocol) on the same metastore, for beeline and BI tools
(``jdbc:hive2://127.0.0.1:19010/default``; it reads s3a:// tables of the stack's S3
too when s3 is up, or started with it: LAKECOMPACT_THRIFTSERVER_S3), and trino: a Trino server (476, on
Java 25 of its own: LAKECOMPACT_TRINO_JAVA_HOME) whose Hive connector (catalog ``hive``) reads the same metastore
(``http://127.0.0.1:19020``) and its tables on local disk (not on the stack's S3: stack/trino.py),
s3: an S3 server (S3Proxy on a filesystem store under .stack/s3/data; bucket
``lake``, identity ``lakecompact``, secret ``lakecompact-secret``; conditional
PUTs honoured: If-None-Match: * atomically, If-Match as a check then a write)
on ``http://127.0.0.1:19030``, for ``s3a://lake/...`` with s3a_jars() and
s3_spark_conf(); s3_request_log() lists the requests it served, and cluster:
a Spark standalone cluster of pyspark's own Spark, a master
(``spark://127.0.0.1:19077``, web UI ``http://127.0.0.1:19040``) and two
workers of 1 core and 2g each (work dirs .stack/cluster/work1, work2);
kill_worker(n) / start_worker(n) for failure tests. By default the workers,
and so their executors, run with PYSPARK_PYTHON=/nonexistent/python and no
PYTHONPATH: nothing that needs Python on an executor (a Python UDF, an RDD
lambda) can run there; LAKECOMPACT_CLUSTER_PYTHON=<python> gives them one.
``up metastore`` starts only what the
metastore needs (PostgreSQL and it); lakecompact then uses it with
``[metastore] uri = "thrift://127.0.0.1:19083"``.

``connect-pg`` / ``connect-mariadb`` open psql / the mariadb client on the
stack's ``lake_src`` database as user ``lake``.

The stack itself is the package ``stack`` at the project's root (a module per component: stack/__init__.py), which
tests and benchmarks import; this file is its command line (stack/cli.py). Its settings and the environment
variables that move them: stack/settings.py. Needs ``scripts/stack/install.sh`` to have run (Debian packages +
jars).
"""
import sys
from pathlib import Path

# run as a script, this folder is first on sys.path, and it holds this file, stack.py, which would shadow the
# package: the project's root (where the package is) takes its place
sys.path[0] = str(Path(__file__).resolve().parents[2])

from stack.cli import main  # after the path above

if __name__ == "__main__":
    sys.exit(main())
