"""A shared Hive metastore ([metastore] uri): waiting a bounded time for it, and naming it when it is gone.

Spark reports an unreachable metastore as a page of Java stack trace, and its Hive client retries three
times a second apart. lakecompact waits for the metastore before it starts Spark, makes Spark's client retry
for as long (`metastore.connect_timeout_seconds`), and turns what still fails into one line naming it.
"""

from __future__ import annotations

import math
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


def wait_until_reachable(metastore: MetastoreConfig, **probing) -> None:
    """Return once one of the URI's addresses accepts a connection; MetastoreUnavailable after the timeout.
    `probing`: retry.wait_until_reachable's connect, sleep and clock (tests)."""
    timeout = metastore.connect_timeout_seconds
    last = retry.wait_until_reachable(
        addresses(metastore.uri), timeout, **probing,
        waiting=lambda last: warn(f"the Hive metastore {metastore.uri} does not answer ({last}); trying for up to {timeout:.0f}s"),
    )
    if last is not None:
        raise MetastoreUnavailable(metastore.uri, timeout, last)


def as_outage(error: BaseException, metastore: MetastoreConfig) -> MetastoreUnavailable | None:
    """The one-line error for a failure that says the shared metastore could not be reached, else None."""
    if not metastore.uri:
        return None
    text = str(error)
    sign = next((s for s in OUTAGE_SIGNS if s in text), None)
    if sign is None:
        return None
    return MetastoreUnavailable(metastore.uri, metastore.connect_timeout_seconds, f"Spark's Hive client: {sign}")
