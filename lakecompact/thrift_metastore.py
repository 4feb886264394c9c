"""A shared Hive metastore ([metastore] uri): waiting a bounded time for it, and naming it when it is gone.

Spark reports an unreachable metastore as a page of Java stack trace, and its Hive client retries three
times a second apart. lakecompact waits for the metastore before it starts Spark, makes Spark's client retry
for as long (`metastore.connect_timeout_seconds`), and turns what still fails into one line naming it.
"""

from __future__ import annotations

import math
import socket
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from lakecompact import retry
from lakecompact.config import MetastoreConfig
from lakecompact.errors import MetastoreUnavailable
from lakecompact.report import warn

RETRY_DELAY_SECONDS = 2
# what the Hive client's exceptions say when the thrift service cannot be reached or went away
OUTAGE_SIGNS = (
    "org.apache.thrift.transport.TTransportException",
    "Could not connect to meta store",
    "Unable to instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient",
    "java.net.ConnectException: Connection refused",
)


def addresses(uri: str) -> list[tuple[str, int]]:
    """host and port of each `thrift://host:port` of a (comma-separated) metastore URI."""
    return [(parts.hostname or "", parts.port or 9083) for parts in map(urlsplit, uri.split(","))]


def client_conf(metastore: MetastoreConfig) -> dict[str, str]:
    """Spark's Hive client reconnects for about `connect_timeout_seconds` before a call fails."""
    retries = max(1, math.ceil(metastore.connect_timeout_seconds / RETRY_DELAY_SECONDS))
    return {
        "spark.hadoop.hive.metastore.connect.retries": str(retries),
        "spark.hadoop.hive.metastore.client.connect.retry.delay": f"{RETRY_DELAY_SECONDS}s",
        "spark.hadoop.hive.metastore.failure.retries": "1",
    }


def wait_until_reachable(
    metastore: MetastoreConfig,
    *,
    connect: Callable[..., socket.socket] = socket.create_connection,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once one of the URI's addresses accepts a connection; MetastoreUnavailable after the timeout."""
    timeout = metastore.connect_timeout_seconds
    deadline = clock() + timeout
    last = ""
    # the project's backoff (retry.py), bounded by the deadline rather than by a number of attempts
    for attempt in retry.attempts(sys.maxsize, 0.5, max_backoff_seconds=5.0,
                                  sleep=lambda seconds: sleep(max(0.0, min(seconds, deadline - clock())))):
        for host, port in addresses(metastore.uri):
            try:
                connect((host, port), timeout=5).close()
                return
            except OSError as exc:
                last = f"{host}:{port}: {exc.strerror or exc}"
        if clock() >= deadline:
            raise MetastoreUnavailable(metastore.uri, timeout, last)
        if attempt == 0:
            warn(f"the Hive metastore {metastore.uri} does not answer ({last}); trying for up to {timeout:.0f}s")


def as_outage(error: BaseException, metastore: MetastoreConfig) -> MetastoreUnavailable | None:
    """The one-line error for a failure that says the shared metastore could not be reached, else None."""
    if not metastore.uri:
        return None
    text = str(error)
    sign = next((s for s in OUTAGE_SIGNS if s in text), None)
    if sign is None:
        return None
    return MetastoreUnavailable(metastore.uri, metastore.connect_timeout_seconds, f"Spark's Hive client: {sign}")
