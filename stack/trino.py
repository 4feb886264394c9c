"""Trino: a server (one node, coordinator and worker) whose Hive connector (catalog ``hive``) reads the stack's
metastore and its tables on local disk, on a JDK of its own (Java 24.0.1 or newer); trino_query() runs a statement
through Trino's client protocol (HTTP), as Trino's command-line client and drivers do, without a JVM per statement."""
from __future__ import annotations

import re
import time
from pathlib import Path

import requests

from .component import Component
from .processes import log, service_marker, spawn
from .settings import (
    CONF_DIR,
    HOST,
    METASTORE_URI,
    STACK_DIR,
    TRINO_CATALOG,
    TRINO_HEAP,
    TRINO_HOME,
    TRINO_JAVA_HOME,
    TRINO_JAVA_RECORD,
    TRINO_PORT,
    TRINO_URL,
    StackError,
)


def java_home() -> Path:
    """The JDK Trino runs on (Trino 476 needs Java 24.0.1 or newer; the machine's java, 17, stays for the rest of
    the stack): LAKECOMPACT_TRINO_JAVA_HOME, else the one install.sh found and recorded."""
    where = TRINO_JAVA_HOME or (TRINO_JAVA_RECORD.read_text().strip() if TRINO_JAVA_RECORD.exists() else "")
    if not where:
        raise StackError(f"no Java for Trino recorded in {TRINO_JAVA_RECORD}: run scripts/stack/install.sh (it "
                         "looks for a JDK 24 or newer under /usr/lib/jvm), or set LAKECOMPACT_TRINO_JAVA_HOME")
    home = Path(where)
    if not (home / "bin" / "java").exists():
        raise StackError(f"no Java for Trino: {home}/bin/java does not exist (Trino needs a JDK 24.0.1 or newer; "
                         "set LAKECOMPACT_TRINO_JAVA_HOME, or run scripts/stack/install.sh to look for one)")
    release = home / "release"
    found = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.MULTILINE) if release.exists() else None
    if found and int(found.group(1)) < 24:
        raise StackError(f"{home} is Java {found.group(1)}: Trino needs Java 24.0.1 or newer "
                         "(set LAKECOMPACT_TRINO_JAVA_HOME to such a JDK)")
    return home


DATA_DIR = STACK_DIR / "trino" / "data"  # node.data-dir: the launcher's pid file, Trino's own state


def _write_conf() -> Path:
    """etc/ for the launcher: one node that is coordinator and worker, on loopback, memory sized for 2 cores; the
    Hive catalog reads file: tables (a local warehouse) through Hadoop's local file system (fs.hadoop.enabled:
    Trino's own file systems have no file: scheme, and in 476 the Hadoop one is off unless enabled).

    Not the stack's S3: Trino 476's native S3 client (fs.native-s3.enabled) asks every listing for
    `x-amz-optional-object-attributes: RestoreStatus`, which S3Proxy 4.0.0 refuses (501 NotImplemented) unless
    set to ignore every header it does not implement (s3proxy.ignore-unknown-headers: lakecompact's own requests
    would then pass the tests with a header S3Proxy silently ignored); the Hadoop S3 client (hive.s3.*) is
    deprecated. No test reads s3a:// with Trino."""
    etc = CONF_DIR / "trino"
    (etc / "catalog").mkdir(parents=True, exist_ok=True)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    files = {
        "node.properties": f"node.environment=lakecompact\nnode.id=lakecompact-stack\nnode.data-dir={DATA_DIR}\n"
                           f"node.bind-ip={HOST}\nnode.internal-address={HOST}\n",
        # the last three: what Trino's libraries do on Java 25 (an agent loaded at run time, native code,
        # sun.misc.Unsafe) allowed, not warned about at every start
        "jvm.config": f"-server\n-Xmx{TRINO_HEAP}\n-XX:+UseG1GC\n-XX:+ExitOnOutOfMemoryError\n"
                      f"-Djdk.attach.allowAttachSelf=true\n{service_marker('trino')}\n"
                      "-XX:+EnableDynamicAgentLoading\n--enable-native-access=ALL-UNNAMED\n"
                      "--sun-misc-unsafe-memory-access=allow\n",
        # query memory + the heap's headroom (30%) must fit the heap
        "config.properties": f"coordinator=true\nnode-scheduler.include-coordinator=true\n"
                             f"http-server.http.port={TRINO_PORT}\ndiscovery.uri={TRINO_URL}\n"
                             "query.max-memory=384MB\nquery.max-memory-per-node=384MB\n",
        "log.properties": "io.trino=WARN\norg.apache.parquet=WARN\n",
        f"catalog/{TRINO_CATALOG}.properties": f"connector.name=hive\nhive.metastore.uri={METASTORE_URI}\n"
                                               "fs.hadoop.enabled=true\n",
    }
    for name, text in files.items():
        (etc / name).write_text(f"# written by the stack package (rewritten on every up)\n{text}")
    return etc


class Trino(Component):
    """Trino's launcher, run in the foreground (its JVM is the launcher's child)."""

    name, title = "trino", "Trino"

    @property
    def address(self) -> str:
        return TRINO_URL

    def start(self) -> bool:
        """Needs the metastore ready."""
        if self.pid():
            return False
        if not (TRINO_HOME / "bin" / "launcher").exists():
            raise StackError(f"Trino is not installed under {TRINO_HOME}: run scripts/stack/install.sh")
        jdk = java_home()
        etc = _write_conf()
        # the launcher's own pid file outlives a Trino that was stopped or killed, and the launcher refuses to start
        # ("already running") when another process has taken that pid since: this component's pid says none runs
        (DATA_DIR / "var" / "run" / "launcher.pid").unlink(missing_ok=True)
        log(f"starting Trino on {TRINO_URL} (catalog {TRINO_CATALOG}: the metastore {METASTORE_URI}; Java {jdk})")
        spawn("trino", [str(TRINO_HOME / "bin" / "launcher"), "run", f"--etc-dir={etc}"],
              env={"JAVA_HOME": str(jdk)})  # the launcher runs $JAVA_HOME/bin/java
        return True

    def ready(self) -> bool:
        """The coordinator answers and has finished starting (its catalogs are loaded)."""
        return requests.get(f"{TRINO_URL}/v1/info", timeout=2).json().get("starting") is False


SERVICE = Trino()


def stop_trino(timeout: float = 60) -> None:
    SERVICE.stop(timeout)


def trino_query(sql: str, schema: str = "default", timeout: float = 300) -> list[dict]:
    """Rows of one statement, as JSON objects (a column's null kept): POST /v1/statement, then each nextUri the
    server gives until the statement is finished, as Trino's client protocol runs one."""
    deadline = time.monotonic() + timeout
    headers = {"X-Trino-User": "lakecompact", "X-Trino-Catalog": TRINO_CATALOG, "X-Trino-Schema": schema}
    reply = requests.post(f"{TRINO_URL}/v1/statement", data=sql.encode(), headers=headers, timeout=timeout).json()
    columns: list[str] = []
    rows: list[list] = []
    while True:
        if "error" in reply:
            error = reply["error"]
            raise StackError(f"trino: {error.get('errorName', 'error')}: {error.get('message', reply['error'])}")
        columns = columns or [c["name"] for c in reply.get("columns", [])]
        rows.extend(reply.get("data", []))
        if "nextUri" not in reply:
            return [dict(zip(columns, row, strict=True)) for row in rows]
        if time.monotonic() > deadline:
            requests.delete(reply["nextUri"], timeout=10)
            raise StackError(f"trino: the statement did not finish within {timeout:.0f}s: {sql[:200]}")
        reply = requests.get(reply["nextUri"], headers=headers, timeout=timeout).json()
