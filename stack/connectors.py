"""Debezium's connectors on the stack's Kafka Connect: their configurations (PostgreSQL, MariaDB), registering
and deleting one, and waiting until one runs and streams from its database's log."""
from __future__ import annotations

import re
import socket
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

import requests

from .mariadb import mariadb_root
from .postgres import pg_sql
from .processes import poll
from .settings import (
    CONNECT_URL,
    KAFKA_BOOTSTRAP,
    MARIADB,
    MARIADB_CONNECTOR_CLASS,
    MARIADB_PORT,
    PG_CONNECTOR_CLASS,
    POSTGRES,
    StackError,
)


def _slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return s[:50]


def _apply_overrides(config: dict, overrides: dict) -> dict:
    """kwargs -> connector config. A key with a dot is used as is, otherwise
    '_' become '.' (snapshot_mode -> snapshot.mode). None removes a key."""
    for k, v in overrides.items():
        key = k if "." in k else k.replace("_", ".")
        if v is None:
            config.pop(key, None)
        else:
            config[key] = str(v).lower() if isinstance(v, bool) else str(v)
    return config


# how both connectors capture: a snapshot first, tombstones after deletes, exact decimals and times, every operation
_CAPTURE = {
    "snapshot.mode": "initial",
    "tombstones.on.delete": "true",
    "decimal.handling.mode": "precise",
    "time.precision.mode": "adaptive_time_microseconds",
    "skipped.operations": "none",
}


def postgres_connector_config(name: str, topic_prefix: str, tables: Iterable[str], **overrides) -> dict:
    tables = list(tables)
    cfg = {
        "connector.class": PG_CONNECTOR_CLASS,
        "tasks.max": "1",
        "database.hostname": POSTGRES.host,
        "database.port": str(POSTGRES.port),
        "database.user": POSTGRES.user,
        "database.password": POSTGRES.password,
        "database.dbname": POSTGRES.database,
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"{_slug(name)}_slot",
        "publication.name": f"{_slug(name)}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        **_CAPTURE,
    }
    return _apply_overrides(cfg, overrides)


def mariadb_connector_config(name: str, topic_prefix: str, tables: Iterable[str], **overrides) -> dict:
    tables = list(tables)
    dbs = sorted({t.split(".", 1)[0] for t in tables if "." in t}) or [MARIADB.database]
    cfg = {
        "connector.class": MARIADB_CONNECTOR_CLASS,
        "tasks.max": "1",
        "database.hostname": MARIADB.host,
        "database.port": str(MARIADB.port),
        # a login of its own, so that the server's process list tells its binlog reader from the others'
        "database.user": mariadb_connector_user(name),
        "database.password": MARIADB.password,
        # unique per connector name, never the server's own id (1)
        "database.server.id": str(100000 + zlib.crc32(name.encode()) % 1_000_000_000),
        "database.ssl.mode": "disable",
        "topic.prefix": topic_prefix,
        "database.include.list": ",".join(dbs),
        "table.include.list": ",".join(tables),
        **_CAPTURE,
        "include.schema.changes": "false",
        "schema.history.internal.kafka.bootstrap.servers": KAFKA_BOOTSTRAP,
        "schema.history.internal.kafka.topic": f"_lakecompact_schema_history.{name}",
    }
    if not tables:
        cfg.pop("table.include.list")
    return _apply_overrides(cfg, overrides)


def _put_connector(name: str, config: dict) -> dict:
    r = requests.put(f"{CONNECT_URL}/connectors/{name}/config", json=config, timeout=60)
    if r.status_code not in (200, 201):
        raise StackError(f"registering connector {name} failed: HTTP {r.status_code} {r.text}")
    return r.json()


def register_postgres_connector(name: str, topic_prefix: str, tables: Iterable[str], **overrides) -> dict:
    """Create (or update) a Debezium PostgreSQL connector capturing ``tables``
    ("schema.table"). Topics: <topic_prefix>.<schema>.<table>. Keyword
    arguments override config keys (see _apply_overrides). Returns the
    config Connect accepted."""
    return _put_connector(name, postgres_connector_config(name, topic_prefix, tables, **overrides))


def register_mariadb_connector(name: str, topic_prefix: str, tables: Iterable[str], **overrides) -> dict:
    """Create (or update) a Debezium MariaDB connector capturing ``tables``
    ("db.table"), logged in as a user of its own (mariadb_connector_user).
    Topics: <topic_prefix>.<db>.<table>."""
    config = mariadb_connector_config(name, topic_prefix, tables, **overrides)
    user, password = config["database.user"], config["database.password"]
    mariadb_root(f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'; "
                  f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'%';")
    return _put_connector(name, config)


def mariadb_connector_user(name: str) -> str:
    """The MariaDB login of the connector ``name`` (the same password as ``lake``)."""
    return f"cdc_{zlib.crc32(name.encode()):08x}"


def list_connectors() -> list[str]:
    r = requests.get(f"{CONNECT_URL}/connectors", timeout=10)
    r.raise_for_status()
    return r.json()


def connector_status(name: str) -> dict:
    r = requests.get(f"{CONNECT_URL}/connectors/{name}/status", timeout=10)
    r.raise_for_status()
    return r.json()


def connector_topics(name: str) -> list[str]:
    """Topics the connector has written to so far (Connect's active topics)."""
    r = requests.get(f"{CONNECT_URL}/connectors/{name}/topics", timeout=10)
    r.raise_for_status()
    return r.json().get(name, {}).get("topics", [])


def wait_connector_running(name: str, timeout: float = 120) -> dict:
    """Poll until the connector and all (>= 1) its tasks are RUNNING; raise
    StackError at once if one FAILED."""
    def check():
        r = requests.get(f"{CONNECT_URL}/connectors/{name}/status", timeout=10)
        if r.status_code != 200:
            return None
        st = r.json()
        states = [st["connector"]["state"]] + [t["state"] for t in st.get("tasks", [])]
        if "FAILED" in states:
            traces = [st["connector"].get("trace")] + [t.get("trace") for t in st.get("tasks", [])]
            raise _Failed(f"connector {name} FAILED: " + "\n".join(t for t in traces if t))
        if st.get("tasks") and all(s == "RUNNING" for s in states):
            return st
        return None

    class _Failed(Exception):
        pass

    deadline = time.monotonic() + timeout
    while True:
        try:
            st = check()
        except _Failed as exc:
            raise StackError(str(exc)) from None
        except requests.RequestException:
            st = None
        if st:
            return st
        if time.monotonic() >= deadline:
            raise StackError(f"timed out after {timeout:.0f}s waiting for connector {name} to run")
        time.sleep(0.5)


def wait_connector_streaming(name: str, timeout: float = 120) -> dict:
    """Poll until the connector's task reads the database's log: a change committed after this returns reaches
    its topics. Connect reports a task RUNNING before Debezium has read its starting position (a snapshot, or
    none with snapshot.mode no_data, comes first), and a change committed in between is never streamed.
    PostgreSQL: the connector's slot is active in a walsender that is streaming. MariaDB: the server runs a
    binlog dump for the connector's own login (mariadb_connector_user). Returns the connector's status."""
    started = time.monotonic()
    status = wait_connector_running(name, timeout)
    config = requests.get(f"{CONNECT_URL}/connectors/{name}/config", timeout=10).json()
    remaining = max(1.0, timeout - (time.monotonic() - started))
    if config["connector.class"] == PG_CONNECTOR_CLASS:
        slot, db = config["slot.name"], config.get("database.dbname", POSTGRES.database)
        poll(lambda: pg_sql("SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_replication r "
                            f"ON r.pid = s.active_pid WHERE s.slot_name = '{slot}' AND r.state = 'streaming'",
                            database=db) == [("1",)], remaining, f"connector {name} streaming from slot {slot}")
    elif config["connector.class"] == MARIADB_CONNECTOR_CLASS:
        user = config["database.user"]
        # a reader killed with Connect leaves its dump thread behind until the server next writes to it
        poll(lambda: any(_tcp_established(client, MARIADB_PORT) for _, client in _mariadb_binlog_dumps(user)),
             remaining, f"connector {name}'s binlog reader ({user})")
    else:
        raise StackError(f"connector {name}: expected a PostgreSQL or MariaDB connector, found "
                         f"{config['connector.class']}")
    return status


def _mariadb_binlog_dumps(user: str) -> list[tuple[str, str]]:
    """The binlog dump threads of ``user``: (thread id, the reader's host:port)."""
    out = mariadb_root("SELECT ID, HOST FROM information_schema.PROCESSLIST "
                        f"WHERE USER = '{user}' AND COMMAND LIKE 'Binlog Dump%'")
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


def _tcp_established(local: str, remote_port: int) -> bool:
    """Whether this machine has an established TCP connection from ``local`` (host:port) to ``remote_port``:
    the client's end of a connection, from /proc/net/tcp."""
    host, port = local.rsplit(":", 1)
    want = f"{socket.inet_aton(host)[::-1].hex().upper()}:{int(port):04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == want and int(fields[2].split(":")[1], 16) == remote_port and fields[3] == "01":
            return True
    return False


def _wait_mariadb_reader_gone(user: str, timeout: float) -> None:
    """Wait until no binlog reader of ``user`` is connected. The server notices a reader that went away only
    when it next sends it an event, so a dump thread whose client end is closed is killed rather than waited
    for; one whose client is still connected (its task still stopping) is waited for."""
    def gone() -> bool:
        dumps = _mariadb_binlog_dumps(user)
        for thread, client in dumps:
            if not _tcp_established(client, MARIADB_PORT):
                mariadb_root(f"KILL {thread}")
        return not dumps

    poll(gone, timeout, f"the binlog reader of {user} to stop")


def delete_connector(name: str, timeout: float = 60, cleanup: bool = True) -> None:
    """Delete a connector (no error if absent) and wait until it is gone and,
    for MariaDB, its binlog reader too (so a change made after this returns is
    never captured by it). With ``cleanup``, a PostgreSQL connector's
    replication slot and publication are dropped too (once the slot is
    released), so that no slot keeps WAL around."""
    r = requests.get(f"{CONNECT_URL}/connectors/{name}/config", timeout=10)
    if r.status_code == 404:
        return
    r.raise_for_status()
    cfg = r.json()
    d = requests.delete(f"{CONNECT_URL}/connectors/{name}", timeout=60)
    if d.status_code not in (200, 204, 404):
        raise StackError(f"deleting connector {name} failed: HTTP {d.status_code} {d.text}")
    poll(lambda: name not in list_connectors(), timeout, f"connector {name} to be deleted")
    if cleanup and cfg.get("connector.class") == PG_CONNECTOR_CLASS:
        slot = cfg.get("slot.name")
        pub = cfg.get("publication.name")
        db = cfg.get("database.dbname", POSTGRES.database)
        if slot:
            # the slot stays active until the task's replication connection closes
            poll(lambda: pg_sql(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' "
                                "AND active", database=db) == [("0",)], timeout, f"slot {slot} to be released")
            pg_sql(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                   f"WHERE slot_name = '{slot}'", database=db)
        if pub:
            pg_sql(f'DROP PUBLICATION IF EXISTS "{pub}"', database=db)
    if cfg.get("connector.class") == MARIADB_CONNECTOR_CLASS and cfg.get("database.user") != MARIADB.user:
        _wait_mariadb_reader_gone(cfg["database.user"], timeout)
