"""The whole stack: its components by name, what each needs, and up / down / status over them."""
from __future__ import annotations

import time
from collections.abc import Iterable

from . import cluster, connect, kafka, mariadb, metastore, postgres, s3, thriftserver, trino
from .component import Component
from .connectors import connector_status, list_connectors
from .install import check_installed
from .processes import log
from .settings import (
    CONF_DIR,
    CONNECT_URL,
    HOST,
    KAFKA_BOOTSTRAP,
    LOG_DIR,
    MARIADB_PORT,
    METASTORE_URI,
    PG_PORT,
    RUN_DIR,
    S3_BUCKET,
    S3_ENDPOINT,
    SPARK_MASTER_URL,
    SPARK_WORKERS,
    STACK_DIR,
    THRIFTSERVER_JDBC_URL,
    TRINO_URL,
    StackError,
)

COMPONENTS = ("postgres", "mariadb", "kafka", "connect", "metastore")
OPTIONAL = ("thriftserver", "trino", "s3", "cluster")  # started only when named
NEEDS = {"connect": ("kafka",), "metastore": ("postgres",), "thriftserver": ("metastore", "postgres"),
         "trino": ("metastore", "postgres")}
SERVICES: dict[str, Component] = {service.name: service for service in (
    postgres.SERVICE, mariadb.SERVICE, kafka.SERVICE, connect.SERVICE, metastore.SERVICE, thriftserver.SERVICE,
    trino.SERVICE, s3.SERVICE, cluster.SERVICE)}

# `up`'s order: the independent servers started together, then each waited for, and what needs it started
UP_STEPS = (("start", "postgres"), ("start", "mariadb"), ("start", "kafka"), ("start", "s3"), ("start", "cluster"),
            ("wait", "postgres"), ("start", "metastore"), ("wait", "mariadb"), ("wait", "kafka"),
            ("start", "connect"), ("wait", "connect"), ("wait", "metastore"),
            ("start", "thriftserver"), ("start", "trino"),
            ("wait", "thriftserver"), ("wait", "trino"), ("wait", "s3"), ("wait", "cluster"))
# `down`'s order: what needs a component stopped before it (the spare metastore with the metastore)
DOWN_ORDER = ("cluster", "s3", "thriftserver", "trino", "connect", "metastore", "kafka", "mariadb", "postgres")


def component(name: str) -> Component:
    """The component ``name`` (one of COMPONENTS + OPTIONAL)."""
    if name not in SERVICES:
        raise StackError(f"unknown component {name}: expected one of {', '.join(COMPONENTS + OPTIONAL)}")
    return SERVICES[name]


def with_needs(components: Iterable[str] | None) -> set[str]:
    """``components`` (default: COMPONENTS) and what they need, their names checked."""
    wanted = set(components or COMPONENTS)
    unknown = wanted - set(COMPONENTS + OPTIONAL)
    if unknown:
        raise StackError(f"unknown component(s) {', '.join(sorted(unknown))}: expected some of "
                         f"{', '.join(COMPONENTS + OPTIONAL)}")
    for name in list(wanted):
        wanted.update(NEEDS.get(name, ()))
    return wanted


def up(timeout: float = 240, components: Iterable[str] | None = None) -> None:
    """Start whatever of `components` (default: all) and what they need is not running, and wait (polling)
    until all of it is ready."""
    wanted = with_needs(components)
    if wanted - {"s3", "cluster"}:
        check_installed()
    if "s3" in wanted:
        s3.SERVICE.installed()
    for d in (STACK_DIR, RUN_DIR, LOG_DIR, CONF_DIR):
        d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    for step, name in UP_STEPS:
        if name not in wanted:
            continue
        if step == "wait":
            SERVICES[name].wait(max(5.0, timeout - (time.monotonic() - t0)))
        elif name == "thriftserver":
            thriftserver.SERVICE.start(s3=thriftserver.wants_s3("s3" in wanted))
        else:
            SERVICES[name].start()
    addresses = {"kafka": f"Kafka {KAFKA_BOOTSTRAP}", "connect": f"Connect {CONNECT_URL}",
                 "postgres": f"PostgreSQL {HOST}:{PG_PORT}", "mariadb": f"MariaDB {HOST}:{MARIADB_PORT}",
                 "metastore": f"Hive metastore {METASTORE_URI}", "thriftserver": f"Thrift server {THRIFTSERVER_JDBC_URL}",
                 "trino": f"Trino {TRINO_URL}", "s3": f"S3 {S3_ENDPOINT} (bucket {S3_BUCKET})",
                 "cluster": f"Spark master {SPARK_MASTER_URL} ({SPARK_WORKERS} workers)"}
    log(f"stack up in {time.monotonic() - t0:.1f}s: "
        + ", ".join(addresses[c] for c in COMPONENTS + OPTIONAL if c in wanted))


def down(components: Iterable[str] | None = None) -> None:
    """Stop `components` (default: all, the optional ones too) cleanly (data stays under the stack dir); what
    needs a stopped component is stopped first."""
    wanted = set(components or COMPONENTS + OPTIONAL)
    with_needs(wanted)  # names checked
    for name, needs in NEEDS.items():
        if wanted & set(needs):
            wanted.add(name)
    for name in DOWN_ORDER:
        if name in wanted:
            if name == "metastore":
                metastore.SPARE.stop()
            SERVICES[name].stop()


def status() -> dict:
    """What runs: {component: {"pid": int|None, "ready": bool, "address": str, ...}}."""
    out = {name: service.status() for name, service in SERVICES.items()}
    if out["connect"]["ready"]:
        try:
            out["connect"]["connectors"] = {n: connector_status(n) for n in list_connectors()}
        except Exception as exc:  # noqa: BLE001
            out["connect"]["connectors_error"] = repr(exc)
    return out
