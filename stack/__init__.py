"""The local end-to-end stack for lakecompact: real services on 127.0.0.1, all state under .stack/, for the
end-to-end tests, the benchmarks and trying lakecompact by hand.

One module per component, each a :class:`stack.component.Component` (``start``, ``ready``, ``stop``, ``logs``)
named ``SERVICE`` in it: postgres, mariadb, kafka, connect (Kafka Connect with Debezium), metastore (the Hive
metastore; and a spare one), thriftserver (Spark's Thrift server), trino, s3 (S3Proxy), cluster (a Spark standalone
cluster). Beside them: settings (ports, paths, logins, StackError), processes (pid files, polling, starting and
stopping), install (what scripts/stack/install.sh put where), connectors (Debezium's connectors on Connect),
control (up / down / status) and cli (the command line, ``python3 scripts/stack/stack.py``).

Importing it starts nothing and needs the standard library and requests (and botocore to sign S3 requests)::

    import stack            # the project's root on sys.path, as pytest from the root has it
    stack.up()
    stack.register_postgres_connector("pg1", "pg1", ["public.orders"])
    stack.wait_connector_streaming("pg1")
    stack.down()

What this module holds is the API the tests and benchmarks use, from the modules above. The environment
variables that move ports, heaps and the state dir are listed in scripts/stack/stack.py.
"""
from . import cluster, connect, kafka, mariadb, metastore, postgres, s3, settings, thriftserver, trino
from .cluster import (
    alive_worker_ports,
    cluster_state,
    cluster_workers,
    kill_worker,
    spark_submit_command,
    start_worker,
    stop_cluster,
    stop_worker,
)
from .component import Component
from .connect import kill_connect, start_connect, stop_connect
from .connectors import (
    connector_status,
    connector_topics,
    delete_connector,
    list_connectors,
    mariadb_connector_config,
    mariadb_connector_user,
    postgres_connector_config,
    register_mariadb_connector,
    register_postgres_connector,
    wait_connector_running,
    wait_connector_streaming,
)
from .control import COMPONENTS, NEEDS, OPTIONAL, component, down, status, up
from .install import jdbc_jars, missing_install, s3a_jars, spark_avro_jars, spark_home, spark_kafka_jars
from .kafka import kafka_broker_count
from .mariadb import mariadb_sql
from .metastore import start_metastore, stop_metastore
from .postgres import pg_sql
from .processes import cmdline, descendants, poll
from .s3 import (
    S3Request,
    s3_request,
    s3_request_log,
    s3_request_log_mark,
    s3_spark_conf,
    s3a_committer_conf,
    stop_s3,
)
from .settings import *
from .thriftserver import beeline, stop_thriftserver, thriftserver_reads_s3
from .trino import stop_trino, trino_query

__all__ = [  # what the tests and benchmarks use; the settings' names come with settings.__all__
    "COMPONENTS",
    "NEEDS",
    "OPTIONAL",
    "Component",
    "S3Request",
    "alive_worker_ports",
    "beeline",
    "cluster",
    "cluster_state",
    "cluster_workers",
    "cmdline",
    "component",
    "connect",
    "connector_status",
    "connector_topics",
    "delete_connector",
    "descendants",
    "down",
    "jdbc_jars",
    "kafka",
    "kafka_broker_count",
    "kill_connect",
    "kill_worker",
    "list_connectors",
    "mariadb",
    "mariadb_connector_config",
    "mariadb_connector_user",
    "mariadb_sql",
    "metastore",
    "missing_install",
    "pg_sql",
    "poll",
    "postgres",
    "postgres_connector_config",
    "register_mariadb_connector",
    "register_postgres_connector",
    "s3",
    "s3_request",
    "s3_request_log",
    "s3_request_log_mark",
    "s3_spark_conf",
    "s3a_committer_conf",
    "s3a_jars",
    "spark_avro_jars",
    "spark_home",
    "spark_kafka_jars",
    "spark_submit_command",
    "start_connect",
    "start_metastore",
    "start_worker",
    "status",
    "stop_cluster",
    "stop_connect",
    "stop_metastore",
    "stop_s3",
    "stop_thriftserver",
    "stop_trino",
    "stop_worker",
    "thriftserver",
    "thriftserver_reads_s3",
    "trino",
    "trino_query",
    "up",
    "wait_connector_running",
    "wait_connector_streaming",
]
__all__ += settings.__all__
