"""Kafka: one node in KRaft mode (broker and controller), its storage formatted at the first start; answers once
a Metadata request counts a live broker."""
from __future__ import annotations

import base64
import socket
import struct
import uuid
from pathlib import Path

from .component import Component
from .processes import java, java_cmd, log, run, spawn, write_common_conf
from .settings import (
    CONF_DIR,
    HOST,
    KAFKA_BOOTSTRAP,
    KAFKA_CONTROLLER_PORT,
    KAFKA_DATA,
    KAFKA_HEAP,
    KAFKA_JARS,
    KAFKA_PORT,
    STACK_DIR,
)


def _write_conf() -> Path:
    write_common_conf()
    path = CONF_DIR / "server.properties"
    path.write_text(f"""\
# written by the stack package (rewritten on every up)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{HOST}:{KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://{HOST}:{KAFKA_PORT},CONTROLLER://{HOST}:{KAFKA_CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://{HOST}:{KAFKA_PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={KAFKA_DATA}
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=168
log.segment.bytes=67108864
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
""")
    return path


def cluster_id() -> str:
    """A random KRaft cluster id. Like Kafka's own Uuid.randomUuid, never one that starts with '-': the storage
    tool's argument parser would take it for an option (1 in 64 ids did, and the stack failed to start)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def kafka_broker_count(host: str = HOST, port: int | None = None, timeout: float = 5) -> int:
    """Send a Kafka Metadata request (v4) and return the number of live
    brokers in the answer: > 0 means the broker serves clients."""
    port = port or KAFKA_PORT
    client_id = b"lakecompact-stack"
    corr = 7
    header = struct.pack(">hhih", 3, 4, corr, len(client_id)) + client_id
    body = struct.pack(">i?", -1, False)  # all topics (null array), no auto-create
    req = header + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        data = _recv_exact(s, size)
    got_corr, _throttle, nbrokers = struct.unpack(">iii", data[:12])
    if got_corr != corr:
        raise ConnectionError("bad correlation id")
    return nbrokers


class Kafka(Component):
    """The broker and controller in one JVM."""

    name, title = "kafka", "Kafka"

    @property
    def address(self) -> str:
        return KAFKA_BOOTSTRAP

    def start(self) -> bool:
        if self.pid():
            return False
        conf = _write_conf()
        KAFKA_DATA.mkdir(parents=True, exist_ok=True)
        if not (KAFKA_DATA / "meta.properties").exists():
            cid_file = STACK_DIR / "kafka" / "cluster.id"
            if not cid_file.exists() or cid_file.read_text().startswith("-"):
                cid_file.write_text(cluster_id() + "\n")
            cid = cid_file.read_text().strip()
            log(f"formatting KRaft storage {KAFKA_DATA} (cluster id {cid})")
            run([java(), "-Xmx256m", f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
                  "-cp", f"{KAFKA_JARS}/*", "kafka.tools.StorageTool", "format", "-t", cid, "-c", str(conf),
                  "--ignore-formatted"], timeout=120)
        log(f"starting Kafka (KRaft) on {KAFKA_BOOTSTRAP}, controller {HOST}:{KAFKA_CONTROLLER_PORT}")
        spawn("kafka", java_cmd("kafka", KAFKA_HEAP, "kafka.Kafka", str(conf)))
        return True

    def ready(self) -> bool:
        return kafka_broker_count() > 0

    def waiting_for(self) -> str:
        return f"Kafka broker on {KAFKA_BOOTSTRAP}"


SERVICE = Kafka()
