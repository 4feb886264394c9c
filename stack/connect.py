"""Kafka Connect: one distributed worker with Debezium's PostgreSQL and MariaDB connectors on its plugin path;
ready once its REST API lists them. (Registering connectors: stack.connectors.)"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import requests

from .component import Component
from .install import check_installed
from .processes import java_cmd, log, pid_alive, pidfile, poll, service_marker, spawn, write_common_conf
from .settings import (
    CONF_DIR,
    CONNECT_GROUP,
    CONNECT_HEAP,
    CONNECT_PORT,
    CONNECT_URL,
    HOST,
    KAFKA_BOOTSTRAP,
    MARIADB_CONNECTOR_CLASS,
    PG_CONNECTOR_CLASS,
    PLUGINS_DIR,
)

REQUIRED_PLUGINS = (PG_CONNECTOR_CLASS, MARIADB_CONNECTOR_CLASS)


def _write_conf() -> Path:
    write_common_conf()
    path = CONF_DIR / "connect-distributed.properties"
    path.write_text(f"""\
# written by the stack package (rewritten on every up)
bootstrap.servers={KAFKA_BOOTSTRAP}
group.id={CONNECT_GROUP}
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
config.storage.topic=_lakecompact_connect_configs
offset.storage.topic=_lakecompact_connect_offsets
status.storage.topic=_lakecompact_connect_status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=5
status.storage.partitions=1
offset.flush.interval.ms=1000
listeners=http://{HOST}:{CONNECT_PORT}
rest.advertised.host.name={HOST}
rest.advertised.port={CONNECT_PORT}
plugin.path={PLUGINS_DIR}
# all plugins (worker classpath + Debezium) have ServiceLoader manifests
plugin.discovery=service_load
connector.client.config.override.policy=All
topic.creation.enable=true
# a single worker: after a hard kill, hand the work back at once
scheduled.rebalance.max.delay.ms=0
session.timeout.ms=6000
heartbeat.interval.ms=2000
task.shutdown.graceful.timeout.ms=10000
""")
    return path


class Connect(Component):
    """The Connect worker's JVM."""

    name, title = "connect", "Kafka Connect"
    poll_interval = 0.5

    @property
    def address(self) -> str:
        return CONNECT_URL

    def start(self) -> bool:
        if self.pid():
            return False
        conf = _write_conf()
        log(f"starting Kafka Connect, REST on {CONNECT_URL}")
        spawn("connect", java_cmd("connect", CONNECT_HEAP, "org.apache.kafka.connect.cli.ConnectDistributed",
                                  str(conf)))
        return True

    def ready(self) -> bool:
        r = requests.get(f"{CONNECT_URL}/connectors", timeout=5)
        if r.status_code != 200:
            return False
        plugins = requests.get(f"{CONNECT_URL}/connector-plugins", timeout=5)
        if plugins.status_code != 200:
            return False
        classes = {p["class"] for p in plugins.json()}
        return all(c in classes for c in REQUIRED_PLUGINS)

    def waiting_for(self) -> str:
        return f"Kafka Connect REST on {CONNECT_URL} listing the Debezium plugins"

    def kill(self) -> None:
        """Hard-kill (SIGKILL) the Connect worker, as in a crash."""
        pid = self.pid()
        if not pid:
            return
        log(f"kill -9 Connect (pid {pid})")
        os.kill(pid, signal.SIGKILL)
        poll(lambda: not pid_alive(pid, service_marker("connect")), 30, "Connect to die")
        pidfile("connect").unlink(missing_ok=True)


SERVICE = Connect()


def start_connect(timeout: float = 180) -> None:
    """Start the Connect worker if it is not running, and wait until ready."""
    check_installed()
    SERVICE.start()
    SERVICE.wait(timeout)


def kill_connect() -> None:
    """Hard-kill (SIGKILL) the Connect worker, as in a crash."""
    SERVICE.kill()


def stop_connect(timeout: float = 60) -> None:
    SERVICE.stop(timeout)
