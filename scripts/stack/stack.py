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
(``http://127.0.0.1:19020``) and its tables on local disk (not on the stack's S3: _trino_write_conf),
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

Importable (stdlib + requests)::

    import stack            # with scripts/stack on sys.path
    stack.up()
    stack.register_postgres_connector("pg1", "pg1", ["public.orders"])
    stack.wait_connector_streaming("pg1")
    stack.down()

Needs ``scripts/stack/install.sh`` to have run (Debian packages + jars).

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

import base64
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import requests

# --------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------
PROJECT_ROOT = Path(__file__).resolve().parents[2]
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
# .stack/pg, or (a symlink to) a dir outside it when the postgres OS user
# cannot reach .stack (see _pg_dir_for_postgres_user)
PG_DIR = (STACK_DIR / "pg").resolve()
PG_DATA = PG_DIR / "data"
PG_SOCK_DIR = PG_DIR / "run"
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


def _log(msg: str) -> None:
    print(f"[stack] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# generic helpers: polling, processes
# --------------------------------------------------------------------------
def poll(check: Callable[[], object], timeout: float, what: str, interval: float = 0.25,
         fail_fast: Callable[[], str | None] | None = None, log: Path | None = None):
    """Call ``check`` until it returns a truthy value (returned) or ``timeout``
    seconds pass (StackError). Exceptions from ``check`` count as "not yet".
    ``fail_fast`` may return an error text to stop early (e.g. process died);
    ``log`` is a log file whose tail goes into the timeout error."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - polling treats errors as "not ready"
            last_exc = exc
        if fail_fast is not None:
            err = fail_fast()
            if err:
                raise StackError(f"{what}: {err}")
        if time.monotonic() >= deadline:
            raise StackError(f"timed out after {timeout:.0f}s waiting for {what}"
                             + (f" (last error: {last_exc!r})" if last_exc else "")
                             + (f"\n{_tail(log)}" if log else ""))
        time.sleep(interval)


def _tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- last lines of {path} ---\n" + "\n".join(lines[-n:])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pid_alive(pid: int, marker: str | None = None) -> bool:
    """True if ``pid`` runs (zombies count as dead and are reaped when they are
    our children) and, if given, its command line contains ``marker``."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        state = stat.rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state in ("Z", "X"):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    if marker is None:
        return True
    cmd = _cmdline(pid)
    # an empty cmdline is a process in the middle of execve (the java
    # launcher re-execs itself): alive, and not yet checkable
    return not cmd.strip() or marker in cmd


def _read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _pidfile(name: str) -> Path:
    return RUN_DIR / f"{name}.pid"


def _died(name: str) -> str | None:
    """For fail-fast while waiting: an error text if the process we started
    (pid file ``name``) is gone."""
    pid = _read_pidfile(_pidfile(name))
    if pid and _pid_alive(pid):
        return None
    return f"{name} exited\n" + _tail(LOG_DIR / f"{name}.log")


def _spawn(name: str, cmd: Sequence[str], env: dict | None = None, user: str | None = None,
           unset: Iterable[str] = ()) -> int:
    """Start a detached background process (as OS ``user`` if given), output
    to logs/<name>.log, pid in run/<name>.pid. Its environment: ours less the
    variables named in ``unset``, with ``env`` on top."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / f"{name}.log"
    with open(log_path, "ab") as logf:
        logf.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(cmd)}\n".encode())
        logf.flush()
        ids = {"user": user, "group": user, "extra_groups": []} if user else {}
        proc = subprocess.Popen(list(cmd), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True, cwd="/" if user else str(STACK_DIR),
                                env={**{k: v for k, v in os.environ.items() if k not in set(unset)}, **(env or {})},
                                **ids)
    _pidfile(name).write_text(f"{proc.pid}\n")
    return proc.pid


def _terminate(pid: int, what: str, marker: str | None, timeout: float) -> None:
    """SIGTERM, wait by polling, then SIGKILL."""
    if not _pid_alive(pid, marker):
        return
    _log(f"stopping {what} (pid {pid})")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        poll(lambda: not _pid_alive(pid, marker), timeout, f"{what} to exit")
    except StackError:
        _log(f"{what} did not exit within {timeout:.0f}s: SIGKILL")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        poll(lambda: not _pid_alive(pid, marker), 30, f"{what} to die after SIGKILL")


def _run(cmd: Sequence[str], *, input: str | None = None, env: dict | None = None, check: bool = True,
         timeout: float = 120, cwd: str | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(list(cmd), input=input, capture_output=True, text=True, check=False,
                       env={**os.environ, **(env or {})}, timeout=timeout, cwd=cwd)
    if check and p.returncode != 0:
        raise StackError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def _is_root() -> bool:
    return os.geteuid() == 0


# --------------------------------------------------------------------------
# install check
# --------------------------------------------------------------------------
def _pg_bindir() -> Path:
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(re.search(r"/postgresql/(\d+)/", p).group(1)))
    if cands:
        return Path(cands[-1]).parent
    which = shutil.which("postgres")
    if which:
        return Path(which).resolve().parent
    raise StackError("PostgreSQL server binaries not found: run scripts/stack/install.sh")


def _mariadbd() -> str:
    for c in ("mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"):
        p = shutil.which(c) or (c if os.path.exists(c) else None)
        if p:
            return p
    raise StackError("mariadbd not found: run scripts/stack/install.sh")


def _jars_ok(d: Path) -> bool:
    return d.is_dir() and any(d.glob("*.jar"))


def missing_install() -> list[str]:
    """What install.sh still has to provide (empty list = installed)."""
    missing = []
    try:
        _pg_bindir()
    except StackError:
        missing.append("postgresql")
    try:
        _mariadbd()
    except StackError:
        missing.append("mariadb-server")
    for tool in ("mariadb-install-db", "mariadb-admin", "mariadb", "java"):
        if not shutil.which(tool):
            missing.append(tool)
    for d in (KAFKA_JARS, PLUGINS_DIR / "debezium-postgres", PLUGINS_DIR / "debezium-mariadb",
              SPARK_KAFKA_JARS_DIR, JDBC_JARS_DIR, METASTORE_JARS, METASTORE_HOME / "lib", METASTORE_LAUNCHER):
        if not _jars_ok(d):
            missing.append(str(d.relative_to(STACK_DIR.parent) if STACK_DIR.parent in d.parents else d))
    return missing


def _check_installed() -> None:
    missing = missing_install()
    if missing:
        raise StackError("stack not installed (missing: " + ", ".join(missing)
                         + "): run scripts/stack/install.sh")


def spark_kafka_jars() -> list[str]:
    """Jars for ``spark.jars`` to use ``spark.read.format("kafka")``."""
    return sorted(str(p) for p in SPARK_KAFKA_JARS_DIR.glob("*.jar"))


def spark_avro_jars() -> list[str]:
    """Jars for ``spark.jars`` to use ``format("avro")``."""
    return sorted(str(p) for p in SPARK_AVRO_JARS_DIR.glob("*.jar"))


def jdbc_jars() -> list[str]:
    """Jars for ``spark.jars`` to read PostgreSQL and MariaDB with Spark's JDBC source."""
    return sorted(str(p) for p in JDBC_JARS_DIR.glob("*.jar"))


def s3a_jars() -> list[str]:
    """Jars for ``s3a://`` paths in pyspark: hadoop-aws for pyspark's Hadoop, the AWS SDK v2 bundle and
    analyticsaccelerator-s3 it declares, and spark-hadoop-cloud (PathOutputCommitProtocol,
    BindingParquetOutputCommitter, for the S3A committers). The SDK bundle is ~650 MB: given as ``spark.jars``
    it is copied into every executor's work dir (and once more in local mode); on this machine (local mode, or
    the stack's cluster) put them on ``spark.driver.extraClassPath`` and ``spark.executor.extraClassPath``
    (``":".join(s3a_jars())``) instead."""
    return sorted(str(p) for p in S3A_JARS_DIR.glob("*.jar"))


# --------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------
def _pg_as_owner(cmd: Sequence[str]) -> list[str]:
    # PostgreSQL refuses to run as root: run its tools as the postgres user.
    return ["runuser", "-u", "postgres", "--", *cmd] if _is_root() else list(cmd)


def _pg_user() -> str | None:
    return "postgres" if _is_root() else None


def _chown_postgres(*paths: Path) -> None:
    if _is_root():
        for p in paths:
            shutil.chown(p, "postgres", "postgres")


def _postgres_can_use(path: Path) -> bool:
    if not _is_root():
        return True
    r = _run(["runuser", "-u", "postgres", "--", "test", "-x", str(path)], check=False)
    return r.returncode == 0


def _pg_dir_for_postgres_user() -> None:
    """The postgres OS user must reach its data dir. When a parent of the
    stack dir is closed to it (e.g. a checkout under /root), keep the cluster
    in /var/tmp/lakecompact-pg-<hash> and link it as .stack/pg."""
    global PG_DIR, PG_DATA, PG_SOCK_DIR
    link = STACK_DIR / "pg"
    if link.exists() or link.is_symlink() or _postgres_can_use(STACK_DIR):
        return
    import hashlib

    alt = Path("/var/tmp") / f"lakecompact-pg-{hashlib.sha1(str(STACK_DIR).encode()).hexdigest()[:10]}"
    alt.mkdir(parents=True, exist_ok=True)
    link.symlink_to(alt)
    _log(f"the postgres user cannot reach {STACK_DIR}: PostgreSQL data in {alt} (linked as {link})")
    PG_DIR, PG_DATA, PG_SOCK_DIR = alt, alt / "data", alt / "run"


def _pg_pid() -> int | None:
    pid = _read_pidfile(PG_DATA / "postmaster.pid")
    if pid and _pid_alive(pid, str(PG_DATA)):
        return pid
    return None


def _pg_init() -> None:
    if (PG_DATA / "PG_VERSION").exists():
        return
    _pg_dir_for_postgres_user()
    _log(f"initdb {PG_DATA}")
    PG_DATA.mkdir(parents=True, exist_ok=True)
    PG_SOCK_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(PG_DATA, 0o700)
    _chown_postgres(PG_DIR, PG_DATA, PG_SOCK_DIR)
    if not _postgres_can_use(PG_DATA):
        raise StackError(f"the postgres OS user cannot use {PG_DATA}")
    _run(_pg_as_owner([str(_pg_bindir() / "initdb"), "-D", str(PG_DATA), "-U", "postgres",
                       "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"]),
         timeout=300, cwd="/")
    with open(PG_DATA / "postgresql.conf", "a") as f:
        f.write("\n# lakecompact stack settings (rewritten by stack.py up)\n"
                "include_if_exists = 'lakecompact_stack.conf'\n")


def _pg_write_conf() -> None:
    conf = PG_DATA / "lakecompact_stack.conf"
    conf.write_text(
        f"listen_addresses = '{HOST}'\n"
        f"port = {PG_PORT}\n"
        f"unix_socket_directories = '{PG_SOCK_DIR}'\n"
        "wal_level = logical\n"
        "max_replication_slots = 20\n"
        "max_wal_senders = 20\n"
        "max_connections = 100\n"
        "shared_buffers = 128MB\n"
        "password_encryption = 'scram-sha-256'\n"
        "log_min_messages = warning\n"
    )
    _chown_postgres(conf)


def _pg_start() -> bool:
    if _pg_pid():
        return False
    _pg_init()
    _pg_write_conf()
    PG_SOCK_DIR.mkdir(parents=True, exist_ok=True)
    _chown_postgres(PG_SOCK_DIR)
    stale = PG_DATA / "postmaster.pid"
    if stale.exists():  # left by a killed server whose pid is gone
        stale.unlink()
    _log(f"starting PostgreSQL on {HOST}:{PG_PORT}")
    # the postmaster itself, as the postgres user; its log (stderr) goes to
    # logs/postgres.log, opened by us
    _spawn("postgres", [str(_pg_bindir() / "postgres"), "-D", str(PG_DATA)], user=_pg_user())
    return True


def _psql_admin(sql: str) -> str:
    """Run SQL as the postgres superuser over the private unix socket."""
    p = _run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", str(PG_SOCK_DIR),
              "-p", str(PG_PORT), "-U", "postgres", "-d", "postgres", "-c", sql])
    return p.stdout.strip()


def _pg_ready() -> bool:
    p = _run(["pg_isready", "-q", "-h", HOST, "-p", str(PG_PORT)], check=False, timeout=10)
    return p.returncode == 0


def _pg_setup() -> None:
    u, pw, db = POSTGRES.user, POSTGRES.password, POSTGRES.database
    _psql_admin(
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{u}') THEN "
        f"CREATE ROLE {u} LOGIN SUPERUSER REPLICATION PASSWORD '{pw}'; END IF; END $$; "
        f"ALTER ROLE {u} LOGIN SUPERUSER REPLICATION PASSWORD '{pw}';")
    if _psql_admin(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") != "1":
        _psql_admin(f"CREATE DATABASE {db} OWNER {u}")


def _pg_wait(timeout: float) -> None:
    poll(_pg_ready, timeout, f"PostgreSQL on {HOST}:{PG_PORT}", log=LOG_DIR / "postgres.log",
         fail_fast=lambda: _died("postgres"))
    if not _pg_login_works():  # set up only when needed: two processes altering the role at once fail
        _pg_setup()
    poll(_pg_login_works, 30, "PostgreSQL login as lake")


def _pg_login_works() -> bool:
    """Password auth over TCP works for the tests' user."""
    try:
        return pg_sql("SELECT 1") == [("1",)]
    except StackError:
        return False


def _pg_stop(timeout: float = 60) -> None:
    pid = _pg_pid()
    if pid:
        # SIGINT = "fast" shutdown (what pg_ctl stop -m fast sends)
        _log(f"stopping PostgreSQL (pid {pid})")
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            poll(lambda: not _pid_alive(pid, str(PG_DATA)), timeout, "PostgreSQL to exit")
        except StackError:
            _terminate(pid, "PostgreSQL", str(PG_DATA), 5)
    _pidfile("postgres").unlink(missing_ok=True)


def pg_sql(sql: str, *, database: str | None = None) -> list[tuple[str, ...]]:
    """Run SQL on the stack's PostgreSQL as ``lake`` (over TCP, password auth).
    Returns the rows of the result sets as tuples of strings (NULL -> '')."""
    s = POSTGRES
    p = _run(["psql", "-X", "-q", "-t", "-A", "-F", "\x1f", "-v", "ON_ERROR_STOP=1",
              "-h", s.host, "-p", str(s.port), "-U", s.user, "-d", database or s.database, "-f", "-"],
             input=sql, env={"PGPASSWORD": s.password, "PGCONNECT_TIMEOUT": "5"})
    return [tuple(line.split("\x1f")) for line in p.stdout.splitlines() if line != ""]


# --------------------------------------------------------------------------
# MariaDB
# --------------------------------------------------------------------------
def _mariadb_pid() -> int | None:
    pid = _read_pidfile(_pidfile("mariadb"))
    if pid and _pid_alive(pid, str(MARIADB_DATA)):
        return pid
    return None


def _mariadb_start() -> bool:
    if _mariadb_pid():
        return False
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    user = ["--user=root"] if _is_root() else []
    if not (MARIADB_DATA / "mysql").is_dir():
        _log(f"mariadb-install-db {MARIADB_DATA}")
        MARIADB_DATA.mkdir(parents=True, exist_ok=True)
        with open(LOG_DIR / "mariadb-install-db.log", "ab") as f:
            r = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={MARIADB_DATA}", *user,
                                "--auth-root-authentication-method=normal", "--skip-test-db",
                                "--skip-name-resolve"], stdout=f, stderr=subprocess.STDOUT, timeout=300,
                               check=False)
        if r.returncode != 0:
            shutil.rmtree(MARIADB_DATA, ignore_errors=True)
            raise StackError("mariadb-install-db failed\n" + _tail(LOG_DIR / "mariadb-install-db.log"))
    for stale in (MARIADB_SOCK, RUN_DIR / "mariadb.sock.lock"):
        if stale.exists():
            stale.unlink()
    _log(f"starting MariaDB on {HOST}:{MARIADB_PORT}")
    _spawn("mariadb", [
        _mariadbd(), "--no-defaults", f"--datadir={MARIADB_DATA}", *user,
        f"--port={MARIADB_PORT}", f"--bind-address={HOST}", f"--socket={MARIADB_SOCK}",
        f"--pid-file={RUN_DIR / 'mariadbd.pid'}", "--skip-name-resolve",
        f"--log-bin={MARIADB_DATA / 'binlog'}", "--binlog-format=ROW", "--binlog-row-image=FULL",
        "--server-id=1", "--expire-logs-days=2", "--innodb-buffer-pool-size=128M",
        "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
        "--max-connections=100",
    ])
    return True


def _mariadb_root(sql: str) -> str:
    p = _run(["mariadb", "--no-defaults", "-S", str(MARIADB_SOCK), "-u", "root", "-B", "-N", "-e", sql])
    return p.stdout.strip()


def _mariadb_ready() -> bool:
    p = _run(["mariadb-admin", "--no-defaults", "-S", str(MARIADB_SOCK), "-u", "root",
              "--connect-timeout=2", "ping"], check=False, timeout=10)
    return p.returncode == 0


def _mariadb_setup() -> None:
    s = MARIADB
    # ALL PRIVILEGES covers what Debezium needs (SELECT, RELOAD, SHOW DATABASES,
    # REPLICATION SLAVE, REPLICATION CLIENT/BINLOG MONITOR, LOCK TABLES) and
    # lets the tests create and drop their tables.
    _mariadb_root(
        f"CREATE DATABASE IF NOT EXISTS {s.database} CHARACTER SET utf8mb4; "
        f"CREATE USER IF NOT EXISTS '{s.user}'@'%' IDENTIFIED BY '{s.password}'; "
        f"ALTER USER '{s.user}'@'%' IDENTIFIED BY '{s.password}'; "
        f"GRANT ALL PRIVILEGES ON *.* TO '{s.user}'@'%'; "
        "FLUSH PRIVILEGES;")


def _mariadb_wait(timeout: float) -> None:
    poll(_mariadb_ready, timeout, f"MariaDB on {HOST}:{MARIADB_PORT}", log=LOG_DIR / "mariadb.log",
         fail_fast=lambda: _died("mariadb"))
    _mariadb_setup()
    poll(lambda: mariadb_sql("SELECT 1") == [("1",)], 30, "MariaDB login as lake")


def _mariadb_stop(timeout: float = 60) -> None:
    pid = _mariadb_pid()
    if pid:
        _terminate(pid, "MariaDB", str(MARIADB_DATA), timeout)
    _pidfile("mariadb").unlink(missing_ok=True)


def mariadb_sql(sql: str, *, database: str | None = None) -> list[tuple[str, ...]]:
    """Run SQL on the stack's MariaDB as ``lake`` over TCP. Returns the rows of
    the result sets as tuples of strings (NULL -> 'NULL')."""
    s = MARIADB
    p = _run(["mariadb", "--no-defaults", "--protocol=tcp", "-h", s.host, "-P", str(s.port), "-u", s.user,
              "-D", database or s.database, "-B", "-N", "--connect-timeout=5"],
             input=sql, env={"MYSQL_PWD": s.password})
    return [tuple(line.split("\t")) for line in p.stdout.splitlines() if line != ""]


# --------------------------------------------------------------------------
# Kafka (KRaft, single node: broker + controller)
# --------------------------------------------------------------------------
_LOG4J2 = """\
status = warn
name = lakecompact-stack
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
logger.kafkaconfig.name = org.apache.kafka.common.config.AbstractConfig
logger.kafkaconfig.level = WARN
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = WARN
logger.hmsaudit.name = org.apache.hadoop.hive.metastore.HiveMetaStore.audit
logger.hmsaudit.level = WARN
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = ERROR
"""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    j = shutil.which("java")
    if not j:
        raise StackError("java not found: run scripts/stack/install.sh")
    return j


def _java_cmd(name: str, heap: str, main: str, *args: str, classpath: str = f"{KAFKA_JARS}/*") -> list[str]:
    return [_java(), "-Xms128m", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=50",
            "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
            f"-Dlakecompact.stack={name}@{STACK_DIR}",  # marker for pid checks
            f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={LOG_DIR}",
            "-cp", classpath, main, *args]


def _write_common_conf() -> None:
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "log4j2.properties").write_text(_LOG4J2)


def _kafka_write_conf() -> Path:
    _write_common_conf()
    path = CONF_DIR / "server.properties"
    path.write_text(f"""\
# written by scripts/stack/stack.py (rewritten on every up)
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


def _kafka_pid() -> int | None:
    return _live_pid("kafka")


def _kafka_cluster_id() -> str:
    """A random KRaft cluster id. Like Kafka's own Uuid.randomUuid, never one that starts with '-': the storage
    tool's argument parser would take it for an option (1 in 64 ids did, and the stack failed to start)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _kafka_start() -> bool:
    if _kafka_pid():
        return False
    conf = _kafka_write_conf()
    KAFKA_DATA.mkdir(parents=True, exist_ok=True)
    if not (KAFKA_DATA / "meta.properties").exists():
        cid_file = STACK_DIR / "kafka" / "cluster.id"
        if not cid_file.exists() or cid_file.read_text().startswith("-"):
            cid_file.write_text(_kafka_cluster_id() + "\n")
        cid = cid_file.read_text().strip()
        _log(f"formatting KRaft storage {KAFKA_DATA} (cluster id {cid})")
        _run([_java(), "-Xmx256m", f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
              "-cp", f"{KAFKA_JARS}/*", "kafka.tools.StorageTool", "format", "-t", cid, "-c", str(conf),
              "--ignore-formatted"], timeout=120)
    _log(f"starting Kafka (KRaft) on {KAFKA_BOOTSTRAP}, controller {HOST}:{KAFKA_CONTROLLER_PORT}")
    _spawn("kafka", _java_cmd("kafka", KAFKA_HEAP, "kafka.Kafka", str(conf)))
    return True


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


def _kafka_wait(timeout: float) -> None:
    poll(lambda: kafka_broker_count() > 0, timeout, f"Kafka broker on {KAFKA_BOOTSTRAP}", log=LOG_DIR / "kafka.log",
         fail_fast=lambda: _died("kafka"))


def _kafka_stop(timeout: float = 60) -> None:
    _stop_service("kafka", "Kafka", timeout)


# --------------------------------------------------------------------------
# Hive metastore (thrift), its tables in the stack's PostgreSQL
# --------------------------------------------------------------------------
def _metastore_conf_dir() -> Path:
    return CONF_DIR / "metastore"


def _metastore_classpath() -> str:
    """The conf dir first: metastore-site.xml (and core-site.xml) are found on the class path.

    With the s3a jars installed, the metastore runs on pyspark's Hadoop client (the version hadoop-aws is
    built for; the metastore's own 3.3.6 is too old for it) with the s3a client: Hive makes the folder of every
    database, table and partition it registers, so a lake on ``s3a://`` needs it, as a production metastore
    does."""
    own = [f"{METASTORE_JARS}/*"]
    s3a = s3a_jars()
    if s3a:
        own = [str(p) for p in sorted(METASTORE_JARS.glob("*.jar")) if "hadoop-client" not in p.name]
        own += sorted(str(p) for p in (spark_home() / "jars").glob("hadoop-client-*.jar")) + s3a
    return ":".join([str(_metastore_conf_dir()), f"{METASTORE_HOME}/lib/*", *own,
                     str(METASTORE_LAUNCHER / "lakecompact-metastore.jar")])


def _metastore_write_conf() -> None:
    _write_common_conf()
    db = METASTORE_DB
    values = {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{db.host}:{db.port}/{db.database}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": db.user,
        "javax.jdo.option.ConnectionPassword": db.password,
        # where a database or table created without a location goes (lakecompact always gives one)
        "metastore.warehouse.dir": str(STACK_DIR / "metastore" / "warehouse"),
        # the defaults name classes of hive-exec, which the standalone metastore does not ship
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        # DataNucleus' pool otherwise keeps ~50 idle PostgreSQL connections
        "datanucleus.connectionPool.maxPoolSize": "5",
        "metastore.schema.verification": "true",
    }
    properties = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in values.items())
    _metastore_conf_dir().mkdir(parents=True, exist_ok=True)
    s3a = {key.removeprefix("spark.hadoop."): value for key, value in s3_spark_conf().items()} if s3a_jars() else {}
    (_metastore_conf_dir() / "core-site.xml").write_text(
        "<?xml version=\"1.0\"?>\n<!-- written by scripts/stack/stack.py: the stack's S3 for s3a:// locations -->\n"
        "<configuration>\n" + "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n"
                                       for k, v in s3a.items()) + "</configuration>\n")
    (_metastore_conf_dir() / "metastore-site.xml").write_text(
        f"<?xml version=\"1.0\"?>\n<!-- written by scripts/stack/stack.py (rewritten on every up) -->\n"
        f"<configuration>\n{properties}</configuration>\n")


def _metastore_schema_ready() -> bool:
    db = METASTORE_DB.database
    if _psql_admin(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") != "1":
        return False
    found = _run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", str(PG_SOCK_DIR), "-p", str(PG_PORT),
                  "-U", "postgres", "-d", db, "-c", "SELECT count(*) FROM pg_tables WHERE tablename = 'VERSION'"])
    return found.stdout.strip() == "1"


def _metastore_setup() -> None:
    """The metastore's role and database, and its schema created by Hive's schematool (once)."""
    u, pw, db = METASTORE_DB.user, METASTORE_DB.password, METASTORE_DB.database
    _psql_admin(
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{u}') THEN "
        f"CREATE ROLE {u} LOGIN PASSWORD '{pw}'; END IF; END $$; "
        f"ALTER ROLE {u} LOGIN PASSWORD '{pw}';")
    if _metastore_schema_ready():
        return
    # no VERSION table: never initialised, or an init that was interrupted; start from an empty database
    _psql_admin(f"DROP DATABASE IF EXISTS {db}")
    _psql_admin(f"CREATE DATABASE {db} OWNER {u}")
    _log(f"creating the metastore schema in PostgreSQL database {db} (Hive schematool -initSchema)")
    _run([_java(), "-Xmx256m", f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
          "-cp", _metastore_classpath(), "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
          "-dbType", "postgres", "-initSchema"], env={"METASTORE_HOME": str(METASTORE_HOME)}, timeout=300)


def _service_marker(name: str) -> str:
    """The system property the stack's `name` JVM is started with: its pid is told from a reused one by it."""
    return f"-Dlakecompact.stack={name}@{STACK_DIR}"


def _live_pid(name: str) -> int | None:
    """The pid of the stack's `name` service (a JVM started with its marker), if it runs."""
    pid = _read_pidfile(_pidfile(name))
    if pid and _pid_alive(pid, _service_marker(name)):
        return pid
    return None


def _stop_service(name: str, what: str, timeout: float) -> None:
    """Stop the stack's `name` JVM (SIGTERM, then SIGKILL after timeout) and forget its pid."""
    pid = _live_pid(name)
    if pid:
        _terminate(pid, what, _service_marker(name), timeout)
    _pidfile(name).unlink(missing_ok=True)


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


def _metastore_name(spare: bool) -> str:
    return "metastore-spare" if spare else "metastore"


def _metastore_port(spare: bool) -> int:
    return SPARE_METASTORE_PORT if spare else METASTORE_PORT


def _metastore_pid(spare: bool = False) -> int | None:
    return _live_pid(_metastore_name(spare))


def _metastore_ready(spare: bool = False) -> bool:
    """The port answers: the service opens it only once its database is reachable."""
    return _port_answers(_metastore_port(spare))


def _metastore_start(spare: bool = False) -> bool:
    """Needs PostgreSQL ready."""
    if _metastore_pid(spare):
        return False
    _metastore_write_conf()
    _metastore_setup()
    name, port = _metastore_name(spare), _metastore_port(spare)
    _log(f"starting the Hive metastore on thrift://{HOST}:{port}")
    _spawn(name, _java_cmd(name, METASTORE_HEAP, "org.apache.hadoop.hive.metastore.LoopbackMetastore",
                           HOST, str(port), classpath=_metastore_classpath()))
    return True


def _metastore_wait(timeout: float, spare: bool = False) -> None:
    name = _metastore_name(spare)
    poll(lambda: _metastore_ready(spare), timeout, f"Hive metastore on thrift://{HOST}:{_metastore_port(spare)}",
         log=LOG_DIR / f"{name}.log", fail_fast=lambda: _died(name))


def start_metastore(timeout: float = 120, *, spare: bool = False) -> None:
    """Start (or restart after stop_metastore) the metastore; PostgreSQL must be up. `spare`: a second metastore
    service on the same database (SPARE_METASTORE_URI), as production runs several; a test that stops its
    metastore stops the spare, and whoever else uses the stack's metastore meanwhile goes on."""
    _metastore_start(spare)
    _metastore_wait(timeout, spare)


def stop_metastore(timeout: float = 60, *, spare: bool = False) -> None:
    _stop_service(_metastore_name(spare), "Hive metastore", timeout)


def _stop_metastores(timeout: float = 60) -> None:
    stop_metastore(timeout, spare=True)
    stop_metastore(timeout)


# --------------------------------------------------------------------------
# Spark's Thrift JDBC/ODBC server (HiveServer2 protocol) on the stack's metastore
# --------------------------------------------------------------------------
def spark_home() -> Path:
    """The Spark that lakecompact runs on (the pyspark package: it ships the Thrift server and beeline)."""
    found = _run([sys.executable, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"], check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise StackError("pyspark not found: run scripts/setup.sh")
    return Path(found.stdout.strip())


def _thriftserver_pid() -> int | None:
    return _live_pid("thriftserver")


def _thriftserver_ready() -> bool:
    """The port answers: HiveServer2 opens it once its Spark session is up."""
    return _port_answers(THRIFTSERVER_PORT)


def _thriftserver_wants_s3(s3_wanted: bool) -> bool:
    """Whether the Thrift server is to read s3a:// paths (LAKECOMPACT_THRIFTSERVER_S3; auto: when the stack's S3 is
    started with it, or runs)."""
    if THRIFTSERVER_S3 in ("0", "1"):
        return THRIFTSERVER_S3 == "1"
    if THRIFTSERVER_S3 != "auto":
        raise StackError(f"LAKECOMPACT_THRIFTSERVER_S3={THRIFTSERVER_S3!r}: expected auto, 1 or 0")
    return s3_wanted or _s3_pid() is not None


def _thriftserver_s3_args() -> list[str]:
    """spark-submit arguments for s3a:// on the stack's S3: the s3a jars on the driver's class path (local[2]: its
    tasks run in the driver's JVM; given as --jars, the ~650 MB SDK bundle would be copied), and s3_spark_conf()."""
    jars = s3a_jars()
    if not jars:
        raise StackError(f"the Thrift server is to read s3a:// (LAKECOMPACT_THRIFTSERVER_S3={THRIFTSERVER_S3}), but no "
                         f"s3a jars are in {S3A_JARS_DIR}: run scripts/stack/install.sh")
    args = ["--driver-class-path", ":".join(jars)]
    for key, value in s3_spark_conf().items():
        args += ["--conf", f"{key}={value}"]
    return args


def thriftserver_reads_s3() -> bool:
    """Whether the running Thrift server was started to read s3a:// paths (False when it does not run)."""
    pid = _thriftserver_pid()
    return bool(pid) and "spark.hadoop.fs.s3a.endpoint=" in _cmdline(pid)


def _thriftserver_start(s3: bool = False) -> bool:
    """Needs the metastore ready. `s3`: with the s3a client and the stack's S3 settings (_thriftserver_s3_args)."""
    if _thriftserver_pid():
        return False
    _write_common_conf()
    work = STACK_DIR / "thriftserver"
    work.mkdir(parents=True, exist_ok=True)
    _log(f"starting Spark's Thrift server on {THRIFTSERVER_JDBC_URL}" + (" (reads s3a://)" if s3 else ""))
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
        "--name", "lakecompact-thriftserver", "--master", "local[2]", "--driver-memory", THRIFTSERVER_HEAP,
        "--driver-java-options", f"{_service_marker('thriftserver')} -Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
        "--conf", "spark.sql.catalogImplementation=hive",
        "--conf", f"spark.hadoop.hive.metastore.uris={METASTORE_URI}",
        "--conf", f"spark.sql.warehouse.dir={work / 'warehouse'}",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.bindAddress={HOST}", "--conf", f"spark.driver.host={HOST}",
        "--conf", "spark.sql.session.timeZone=UTC",
        "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
        "--hiveconf", f"hive.server2.thrift.port={THRIFTSERVER_PORT}",
        *(_thriftserver_s3_args() if s3 else []),
        "spark-internal",
    ]
    _spawn("thriftserver", command, env={**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_LOG_DIR": str(LOG_DIR)})
    return True


def _thriftserver_wait(timeout: float) -> None:
    poll(_thriftserver_ready, timeout, f"Spark's Thrift server on {THRIFTSERVER_JDBC_URL}",
         log=LOG_DIR / "thriftserver.log", fail_fast=lambda: _died("thriftserver"))


def stop_thriftserver(timeout: float = 60) -> None:
    _stop_service("thriftserver", "Spark's Thrift server", timeout)


def beeline(sql: str, timeout: float = 300) -> list[list[str]]:
    """Rows of a query run by beeline (Hive's JDBC command-line client) through the Thrift server: tab-separated
    values (NULL as the text NULL), so no value may hold a tab or a line break."""
    found = _run([str(spark_home() / "bin" / "beeline"), "-u", THRIFTSERVER_JDBC_URL, "-n", "lakecompact",
                  "--silent=true", "--showHeader=false", "--outputformat=tsv2", "-e", sql],
                 input="", check=False, timeout=timeout)
    if found.returncode != 0:
        raise StackError(f"beeline exited {found.returncode}: {(found.stderr or found.stdout)[-2000:]}")
    # beeline prints its prompt before the first row even when silent
    text = re.sub(r"^\d+: jdbc:hive2://\S*> ", "", found.stdout)
    return [line.split("\t") for line in text.splitlines() if line]


# --------------------------------------------------------------------------
# Trino (its Hive connector on the stack's metastore)
# --------------------------------------------------------------------------
def _trino_pid() -> int | None:
    return _live_pid("trino")


def _trino_ready() -> bool:
    """The coordinator answers and has finished starting (its catalogs are loaded)."""
    return requests.get(f"{TRINO_URL}/v1/info", timeout=2).json().get("starting") is False


def _trino_java_home() -> Path:
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


def _trino_write_conf() -> Path:
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
    data = STACK_DIR / "trino" / "data"
    data.mkdir(parents=True, exist_ok=True)
    files = {
        "node.properties": f"node.environment=lakecompact\nnode.id=lakecompact-stack\nnode.data-dir={data}\n"
                           f"node.bind-ip={HOST}\nnode.internal-address={HOST}\n",
        # the last three: what Trino's libraries do on Java 25 (an agent loaded at run time, native code,
        # sun.misc.Unsafe) allowed, not warned about at every start
        "jvm.config": f"-server\n-Xmx{TRINO_HEAP}\n-XX:+UseG1GC\n-XX:+ExitOnOutOfMemoryError\n"
                      f"-Djdk.attach.allowAttachSelf=true\n{_service_marker('trino')}\n"
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
        (etc / name).write_text(f"# written by scripts/stack/stack.py (rewritten on every up)\n{text}")
    return etc


def _trino_start() -> bool:
    """Needs the metastore ready."""
    if _trino_pid():
        return False
    if not (TRINO_HOME / "bin" / "launcher").exists():
        raise StackError(f"Trino is not installed under {TRINO_HOME}: run scripts/stack/install.sh")
    java_home = _trino_java_home()
    etc = _trino_write_conf()
    _log(f"starting Trino on {TRINO_URL} (catalog {TRINO_CATALOG}: the metastore {METASTORE_URI}; Java {java_home})")
    _spawn("trino", [str(TRINO_HOME / "bin" / "launcher"), "run", f"--etc-dir={etc}"],
           env={"JAVA_HOME": str(java_home)})  # the launcher runs $JAVA_HOME/bin/java
    return True


def _trino_wait(timeout: float) -> None:
    poll(_trino_ready, timeout, f"Trino on {TRINO_URL}", log=LOG_DIR / "trino.log",
         fail_fast=lambda: _died("trino"))


def stop_trino(timeout: float = 60) -> None:
    _stop_service("trino", "Trino", timeout)


def trino(sql: str, schema: str = "default", timeout: float = 300) -> list[dict]:
    """Rows of one statement run by Trino's command-line client in the stack's catalog, as JSON objects."""
    [cli] = TRINO_JARS.glob("trino-cli-*-executable.jar")
    java = str(_trino_java_home() / "bin" / "java")
    found = _run([java, "--enable-native-access=ALL-UNNAMED", "-jar", str(cli), "--server", TRINO_URL,
                  "--catalog", TRINO_CATALOG, "--schema", schema,
                  "--output-format", "JSON", "--execute", sql], input="", check=False, timeout=timeout)
    if found.returncode != 0:
        raise StackError(f"trino exited {found.returncode}: {(found.stderr or found.stdout)[-2000:]}")
    return [json.loads(line) for line in found.stdout.splitlines() if line.startswith("{")]


# --------------------------------------------------------------------------
# Kafka Connect (distributed worker)
# --------------------------------------------------------------------------
def _connect_write_conf() -> Path:
    _write_common_conf()
    path = CONF_DIR / "connect-distributed.properties"
    path.write_text(f"""\
# written by scripts/stack/stack.py (rewritten on every up)
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


def _connect_pid() -> int | None:
    return _live_pid("connect")


def _connect_spawn() -> bool:
    if _connect_pid():
        return False
    conf = _connect_write_conf()
    _log(f"starting Kafka Connect, REST on {CONNECT_URL}")
    _spawn("connect", _java_cmd("connect", CONNECT_HEAP, "org.apache.kafka.connect.cli.ConnectDistributed",
                                str(conf)))
    return True


REQUIRED_PLUGINS = (PG_CONNECTOR_CLASS, MARIADB_CONNECTOR_CLASS)


def _connect_ready() -> bool:
    r = requests.get(f"{CONNECT_URL}/connectors", timeout=5)
    if r.status_code != 200:
        return False
    plugins = requests.get(f"{CONNECT_URL}/connector-plugins", timeout=5)
    if plugins.status_code != 200:
        return False
    classes = {p["class"] for p in plugins.json()}
    return all(c in classes for c in REQUIRED_PLUGINS)


def _connect_wait(timeout: float) -> None:
    poll(_connect_ready, timeout, f"Kafka Connect REST on {CONNECT_URL} listing the Debezium plugins",
         interval=0.5, log=LOG_DIR / "connect.log",
         fail_fast=lambda: _died("connect"))


def start_connect(timeout: float = 180) -> None:
    """Start the Connect worker if it is not running, and wait until ready."""
    _check_installed()
    _connect_spawn()
    _connect_wait(timeout)


def kill_connect() -> None:
    """Hard-kill (SIGKILL) the Connect worker, as in a crash."""
    pid = _connect_pid()
    if not pid:
        return
    _log(f"kill -9 Connect (pid {pid})")
    os.kill(pid, signal.SIGKILL)
    poll(lambda: not _pid_alive(pid, _service_marker("connect")), 30, "Connect to die")
    _pidfile("connect").unlink(missing_ok=True)


def stop_connect(timeout: float = 60) -> None:
    _stop_service("connect", "Kafka Connect", timeout)


# --------------------------------------------------------------------------
# S3 (S3Proxy on a filesystem store): `up s3`
# --------------------------------------------------------------------------
# S3Proxy 4.0.0 (scripts/stack/pom.xml says how it was chosen): the only release whose If-None-Match: * PUT is
# atomic (its filesystem store publishes such a PUT with link(2)); If-Match is honoured, as a HEAD then a write.
_S3_LOGBACK = """\
<configuration>
  <!-- written by scripts/stack/stack.py (rewritten on every up) -->
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>[s3proxy] %.-1p %d{{MM-dd HH:mm:ss.SSS}} %t %c{{30}} %m%n</pattern></encoder>
  </appender>
  <!-- each request's line and its headers, for s3_request_log(); emptied at every start -->
  <appender name="REQUESTS" class="ch.qos.logback.core.FileAppender">
    <file>{requests}</file>
    <append>false</append>
    <encoder><pattern>%d{{HH:mm:ss.SSS}}|%t|%m%n</pattern></encoder>
  </appender>
  <logger name="org.gaul.s3proxy.S3ProxyHandler" level="{level}" additivity="false">
    <appender-ref ref="REQUESTS" />
  </logger>
  <root level="INFO"><appender-ref ref="STDOUT" /></root>
</configuration>
"""
S3_REQUESTS_LOG = LOG_DIR / "s3-requests.log"


def spark_submit_command(*, executor_memory: str = "1g", driver_memory: str | None = None,
                         java_options: str | None = None, jars: list[str] | None = None, cores: int | None = None,
                         conf: dict[str, str] | None = None, driver_class_path: bool = True) -> list[str]:
    """spark-submit in client mode on the stack's cluster, up to the application's file: the s3a jars on the
    driver's and executors' class paths (never --jars: the AWS SDK bundle is ~650 MB, copied to every executor),
    Python on the driver only (the executors get CLUSTER_PYTHON), loopback; `java_options` for the driver and the
    executors, `jars` by --jars, `cores`: spark.cores.max (None: all the cluster's), `conf` added last.
    `driver_class_path=False`: the caller gives the driver the s3a jars by SPARK_DIST_CLASSPATH, after Spark's
    jars, where a JVM class archive made without them still matches the class path."""
    s3a = ":".join(s3a_jars())
    settings = {
        "spark.executor.extraClassPath": s3a,
        **({"spark.executor.extraJavaOptions": java_options} if java_options else {}),
        "spark.executor.memory": executor_memory,
        "spark.pyspark.driver.python": sys.executable,
        "spark.pyspark.python": CLUSTER_PYTHON,
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.ui.enabled": "false",
        **({"spark.cores.max": str(cores)} if cores else {}),
        **(conf or {}),
    }
    return [str(spark_home() / "bin" / "spark-submit"), "--master", SPARK_MASTER_URL, "--deploy-mode", "client",
            *(["--driver-class-path", s3a] if driver_class_path else []),
            *(["--driver-memory", driver_memory] if driver_memory else []),
            *(["--driver-java-options", java_options] if java_options else []),
            *(["--jars", ",".join(jars)] if jars else []),
            *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]]


def s3_spark_conf() -> dict[str, str]:
    """The ``spark.hadoop.fs.s3a.*`` settings for ``s3a://<S3_BUCKET>/...`` on the stack's S3 (jars:
    s3a_jars()). The checksum settings are Hadoop 3.5's defaults, spelled out: the AWS SDK (>= 2.30) would
    otherwise add CRC32 checksums to every upload (aws-chunked bodies with trailers) and validate the ones in
    responses."""
    s3a = {
        "endpoint": S3_ENDPOINT,
        "endpoint.region": S3_REGION,
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        "access.key": S3_ACCESS_KEY,
        "secret.key": S3_SECRET_KEY,
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "checksum.generation": "false",
        "checksum.validation": "false",
        "create.conditional.enabled": "true",  # createFile(...).opt("fs.option.create.conditional.overwrite")
    }
    return {f"spark.hadoop.fs.s3a.{k}": v for k, v in s3a.items()}


def s3a_committer_conf(committer: str = "magic") -> dict[str, str]:
    """Spark settings that write files on s3a:// through the S3A committer ``committer`` (``magic``, or the
    staging ones ``directory``/``partitioned``) bound by spark-hadoop-cloud (PathOutputCommitProtocol,
    BindingParquetOutputCommitter). (Without these, pyspark 4.3 already writes s3a:// through the magic
    committer: its SparkContext sets fs.s3a.committer.name=magic; no renames either way.) The staging committers keep their task lists in a directory that driver and
    executors must share: .stack/s3/staging, on this machine."""
    conf = {
        "spark.hadoop.fs.s3a.committer.name": committer,
        "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
        "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
        "spark.sql.parquet.output.committer.class":
            "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
    }
    if committer != "magic":
        conf["spark.hadoop.fs.s3a.committer.staging.tmp.path"] = (S3_DIR / "staging").as_uri()
    return conf


def _sigv4_headers(method: str, url: str, headers: dict, payload: bytes) -> dict:
    """``headers`` plus AWS Signature V4 (service s3) headers for a request to ``url`` (its path and query already
    in canonical, percent-encoded form) with the stack's credentials."""
    import hashlib
    import hmac
    from datetime import UTC, datetime
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    now = datetime.now(UTC)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload_hash = hashlib.sha256(payload).hexdigest()
    signed_headers = {k.lower().strip(): " ".join(str(v).split()) for k, v in headers.items()}
    signed_headers.update({"host": parts.netloc, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash})
    names = sorted(signed_headers)
    query = "&".join(sorted(q if "=" in q else q + "=" for q in parts.query.split("&") if q))
    canonical = "\n".join([method, parts.path or "/", query, "".join(f"{n}:{signed_headers[n]}\n" for n in names),
                           ";".join(names), payload_hash])
    scope = f"{day}/{S3_REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + S3_SECRET_KEY).encode()
    for part in (day, S3_REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {**headers, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={S3_ACCESS_KEY}/{scope}, "
                             f"SignedHeaders={';'.join(names)}, Signature={signature}"}


def s3_request(method: str, key: str = "", *, bucket: str | None = None, data: bytes = b"",
               headers: dict | None = None, params: dict | None = None, timeout: float = 30) -> requests.Response:
    """One signed (SigV4) request to the stack's S3: ``method`` on ``/<bucket>/<key>`` (path style; bucket
    S3_BUCKET, or "" for the service itself), e.g. ``s3_request("PUT", "a/b", data=b"x",
    headers={"If-None-Match": "*"})``. Returns the response, whatever its status."""
    from urllib.parse import quote

    bucket = S3_BUCKET if bucket is None else bucket
    path = "/" + "/".join(x for x in (quote(bucket, safe=""), quote(key, safe="/~")) if x)
    query = "&".join(f"{quote(str(k), safe='~')}={quote(str(v), safe='~')}" for k, v in (params or {}).items())
    url = S3_ENDPOINT + path + (f"?{query}" if query else "")
    return requests.request(method, url, data=data, headers=_sigv4_headers(method, url, dict(headers or {}), data),
                            timeout=timeout)


@dataclasses.dataclass(frozen=True)
class S3Request:
    """One request S3Proxy served, as its request log shows it."""
    time: str  # HH:MM:SS.mmm
    method: str
    bucket: str
    key: str  # "" for a bucket or the service
    query: dict[str, str]
    copy_source: str | None  # x-amz-copy-source: a copy (CopyObject, UploadPartCopy)
    headers: dict[str, str]  # lower-case names

    @property
    def op(self) -> str:
        """The S3 operation: CopyObject, UploadPartCopy, PutObject, UploadPart, CreateMultipartUpload,
        CompleteMultipartUpload, AbortMultipartUpload, GetObject, HeadObject, DeleteObject, DeleteObjects,
        ListObjects, ListMultipartUploads, HeadBucket, CreateBucket, DeleteBucket, ListBuckets, or Other."""
        m, q, obj = self.method, self.query, bool(self.key)
        if not self.bucket:
            return "ListBuckets" if m == "GET" else "Other"
        if not obj:
            if m == "GET":
                return "ListMultipartUploads" if "uploads" in q else "ListObjects"
            if m == "POST" and "delete" in q:
                return "DeleteObjects"
            return {"HEAD": "HeadBucket", "PUT": "CreateBucket", "DELETE": "DeleteBucket"}.get(m, "Other")
        if m == "PUT":
            if self.copy_source:
                return "UploadPartCopy" if "partNumber" in q else "CopyObject"
            return "UploadPart" if "partNumber" in q else "PutObject"
        if m == "POST":
            return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload" if "uploadId" in q else "Other"
        if m == "DELETE":
            return "AbortMultipartUpload" if "uploadId" in q else "DeleteObject"
        return {"GET": "GetObject", "HEAD": "HeadObject"}.get(m, "Other")


_S3_REQUEST_LINE = re.compile(r"^([^|]*)\|([^|]*)\|request: .*\{([A-Z]+)@\w+ (\S+) HTTP/[\d.]+\}")
_S3_HEADER_LINE = re.compile(r"^([^|]*)\|([^|]*)\|header: ([^:]+): ?(.*)$")


def s3_request_log_mark() -> int:
    """Where the request log ends now: ``s3_request_log(since=mark)`` gives the requests served after it."""
    try:
        return S3_REQUESTS_LOG.stat().st_size
    except OSError:
        return 0


def s3_request_log(since: int = 0) -> list[S3Request]:
    """The requests the stack's S3 has served since it started (or since the byte offset ``since`` of
    s3_request_log_mark()), in the order they arrived, parsed from S3Proxy's log of each request's line and
    headers (S3ProxyHandler at TRACE; off with LAKECOMPACT_S3_REQUEST_LOG=0). Copies are the requests with
    a ``copy_source`` (``op`` CopyObject or UploadPartCopy). A request is logged as it arrives, so all those of
    a finished job are there; a request S3Proxy refused (e.g. 412) is counted too."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        with open(S3_REQUESTS_LOG, "rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    pending: dict[str, dict] = {}  # thread -> the request it is handling (a Jetty thread serves one at a time)
    done: list[dict] = []
    for line in text.splitlines():
        m = _S3_REQUEST_LINE.match(line)
        if m:
            time_, thread, method, url = m.groups()
            parts = urlsplit(url)
            bucket, _, key = parts.path.lstrip("/").partition("/")
            entry = {"time": time_, "method": method, "bucket": unquote(bucket), "key": unquote(key),
                     "query": dict(parse_qsl(parts.query, keep_blank_values=True)), "headers": {}}
            pending[thread] = entry
            done.append(entry)
            continue
        m = _S3_HEADER_LINE.match(line)
        if m and m.group(2) in pending:
            pending[m.group(2)]["headers"][m.group(3).lower()] = m.group(4)
    out = []
    for e in done:
        source = e["headers"].get("x-amz-copy-source")
        out.append(S3Request(e["time"], e["method"], e["bucket"], e["key"], e["query"],
                             unquote(source) if source else None, e["headers"]))
    return out


def _s3proxy_jar() -> Path:
    jars = sorted(S3PROXY_JARS.glob("s3proxy-*-jar-with-dependencies.jar"))
    if not jars:
        raise StackError(f"S3Proxy is not installed under {S3PROXY_JARS}: run scripts/stack/install.sh")
    return jars[-1]


def _s3_pid() -> int | None:
    return _live_pid("s3")


def _s3_ready() -> bool:
    """S3Proxy answers a signed request for the stack's bucket."""
    return s3_request("HEAD", timeout=3).status_code == 200


def _s3_write_conf() -> Path:
    (S3_DIR / "data").mkdir(parents=True, exist_ok=True)
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "s3proxy-logback.xml").write_text(
        _S3_LOGBACK.format(requests=S3_REQUESTS_LOG, level="TRACE" if S3_REQUEST_LOG else "INFO"))
    conf = CONF_DIR / "s3proxy.conf"
    conf.write_text(
        "# written by scripts/stack/stack.py (rewritten on every up)\n"
        f"s3proxy.endpoint={S3_ENDPOINT}\n"
        "s3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.identity={S3_ACCESS_KEY}\n"
        f"s3proxy.credential={S3_SECRET_KEY}\n"
        # filesystem-nio2: S3Proxy's own store ("filesystem" maps to it in 4.x), whose If-None-Match is atomic
        "jclouds.provider=filesystem-nio2\n"
        "jclouds.identity=lakecompact\n"
        "jclouds.credential=lakecompact\n"
        f"jclouds.filesystem.basedir={S3_DIR / 'data'}\n")
    return conf


def _s3_start() -> bool:
    if _s3_pid():
        return False
    jar = _s3proxy_jar()
    conf = _s3_write_conf()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    _log(f"starting S3Proxy ({jar.name}) on {S3_ENDPOINT}, data under {S3_DIR / 'data'}")
    cmd = [_java(), "-Xms64m", f"-Xmx{S3_HEAP}", "-Djava.net.preferIPv4Stack=true", _service_marker("s3"),
           f"-Dlogback.configurationFile={CONF_DIR / 's3proxy-logback.xml'}",
           "-cp", str(jar), "org.gaul.s3proxy.Main", "--properties", str(conf)]
    _spawn("s3", cmd)
    return True


def _s3_wait(timeout: float) -> None:
    def answers() -> bool:  # any HTTP answer: S3Proxy serves
        requests.get(S3_ENDPOINT + "/", timeout=2)
        return True

    poll(answers, timeout, f"S3Proxy on {S3_ENDPOINT}", log=LOG_DIR / "s3.log", fail_fast=lambda: _died("s3"))
    created = s3_request("PUT")  # 200, or 409 BucketAlreadyOwnedByYou
    if created.status_code not in (200, 409):
        raise StackError(f"creating bucket {S3_BUCKET} failed: HTTP {created.status_code} {created.text}")
    poll(_s3_ready, 30, f"bucket {S3_BUCKET} on {S3_ENDPOINT}", log=LOG_DIR / "s3.log")


def stop_s3(timeout: float = 30) -> None:
    _stop_service("s3", "S3Proxy", timeout)


# --------------------------------------------------------------------------
# Spark standalone cluster (a master and two workers, pyspark's own Spark): `up cluster`
# --------------------------------------------------------------------------
def _cluster_conf(name: str) -> Path:
    """The properties file a daemon is started with: its path (in the command line) tells its pid apart."""
    return CONF_DIR / "cluster" / f"{name}.properties"


def _cluster_pid(name: str) -> int | None:
    pid = _read_pidfile(_pidfile(name))
    if pid and _pid_alive(pid, str(_cluster_conf(name))):
        return pid
    return None


def _worker_name(n: int) -> str:
    if not 1 <= n <= SPARK_WORKERS:
        raise StackError(f"no worker {n}: the stack's cluster has workers 1..{SPARK_WORKERS}")
    return f"cluster-worker{n}"


def _cluster_spawn(name: str, main: str, args: Sequence[str], properties: dict[str, str]) -> None:
    conf = _cluster_conf(name)
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("# written by scripts/stack/stack.py (rewritten on every start)\n"
                    + "".join(f"{k}={v}\n" for k, v in properties.items()))
    local = CLUSTER_DIR / name.removeprefix("cluster-").replace("worker", "local")
    local.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    env = {"SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_HOSTNAME": HOST,
           "SPARK_LOG_DIR": str(LOG_DIR), "SPARK_LOCAL_DIRS": str(local), "SPARK_DAEMON_MEMORY": SPARK_DAEMON_HEAP,
           "SPARK_CONF_DIR": str(conf.parent),  # no spark-defaults.conf: nothing but what is given here
           # executors are started with the worker's environment: no Python to be found, no project on a path
           "PYSPARK_PYTHON": CLUSTER_PYTHON, "PYSPARK_DRIVER_PYTHON": CLUSTER_PYTHON}
    _spawn(name, [str(home / "bin" / "spark-class"), main, *args, "--properties-file", str(conf)], env=env,
           unset=("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH",
                  "PYSPARK_SUBMIT_ARGS", "SPARK_DAEMON_JAVA_OPTS"))


def _cluster_state() -> dict:
    """The master's view (its web UI's JSON): workers, apps, ..."""
    r = requests.get(f"{SPARK_MASTER_WEBUI_URL}/json/", timeout=3)
    r.raise_for_status()
    return r.json()


def _alive_worker_ports() -> set[int]:
    return {w["port"] for w in _cluster_state().get("workers", []) if w.get("state") == "ALIVE"}


def _worker_port(n: int) -> int:
    return SPARK_WORKER_PORT + n - 1


def _cluster_ready() -> bool:
    """The master answers and shows all the stack's workers ALIVE."""
    ports = _alive_worker_ports()
    return all(_worker_port(n) in ports for n in range(1, SPARK_WORKERS + 1))


def _master_start() -> bool:
    if _cluster_pid("cluster-master"):
        return False
    _log(f"starting the Spark master on {SPARK_MASTER_URL} (web UI {SPARK_MASTER_WEBUI_URL})")
    _cluster_spawn("cluster-master", "org.apache.spark.deploy.master.Master",
                   ["--host", HOST, "--port", str(SPARK_MASTER_PORT), "--webui-port", str(SPARK_MASTER_WEBUI_PORT)],
                   {"spark.master.rest.enabled": "false", "spark.ui.reverseProxy": "false",
                    # a worker that stopped answering without closing its connection is given up on after this
                    "spark.worker.timeout": "15"})
    return True


def _worker_start(n: int) -> bool:
    name = _worker_name(n)
    if _cluster_pid(name):
        return False
    work = CLUSTER_DIR / f"work{n}"
    work.mkdir(parents=True, exist_ok=True)
    _log(f"starting Spark worker {n} on {HOST}:{_worker_port(n)} ({SPARK_WORKER_CORES} core(s), {SPARK_WORKER_MEMORY}; "
         f"PYSPARK_PYTHON={CLUSTER_PYTHON})")
    _cluster_spawn(name, "org.apache.spark.deploy.worker.Worker",
                   [SPARK_MASTER_URL, "--host", HOST, "--port", str(_worker_port(n)),
                    "--webui-port", str(SPARK_WORKER_WEBUI_PORT + n - 1), "--cores", str(SPARK_WORKER_CORES),
                    "--memory", SPARK_WORKER_MEMORY, "--work-dir", str(work)],
                   # finished applications' dirs (their jars, executor logs) go after a day
                   {"spark.worker.cleanup.enabled": "true", "spark.worker.cleanup.appDataTtl": "86400"})
    return True


def _cluster_start() -> None:
    _master_start()
    for n in range(1, SPARK_WORKERS + 1):
        _worker_start(n)


def _cluster_died() -> str | None:
    for name in ["cluster-master"] + [_worker_name(n) for n in range(1, SPARK_WORKERS + 1)]:
        err = _died(name)
        if err:
            return err
    return None


def _cluster_wait(timeout: float) -> None:
    poll(_cluster_ready, timeout, f"the Spark master {SPARK_MASTER_URL} with {SPARK_WORKERS} ALIVE workers",
         log=LOG_DIR / "cluster-master.log", fail_fast=_cluster_died)


def descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (children first, then theirs)."""
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_worker(n: int, executors: bool = True, timeout: float = 30) -> None:
    """kill -9 worker ``n`` (1 or 2) as in a machine loss: its JVM and, with ``executors``, the executor JVMs it
    started (without, they exit by themselves once their worker is gone). Returns once the master no longer
    counts it ALIVE."""
    name = _worker_name(n)
    pid = _cluster_pid(name)
    if not pid:
        return
    victims = [pid] + (descendants(pid) if executors else [])
    _log(f"kill -9 Spark worker {n} (pid {pid}" + (f", its processes {victims[1:]})" if victims[1:] else ")"))
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    poll(lambda: not any(_pid_alive(v) for v in victims), timeout, f"Spark worker {n} to die")
    _pidfile(name).unlink(missing_ok=True)
    poll(lambda: _worker_port(n) not in _alive_worker_ports(), timeout, f"the master to drop worker {n}")


def start_worker(n: int, timeout: float = 60) -> None:
    """Start worker ``n`` (after kill_worker or stop_worker) and wait until the master counts it ALIVE."""
    _worker_start(n)
    poll(lambda: _worker_port(n) in _alive_worker_ports(), timeout, f"Spark worker {n} to register",
         log=LOG_DIR / f"{_worker_name(n)}.log", fail_fast=lambda: _died(_worker_name(n)))


def stop_worker(n: int, timeout: float = 30) -> None:
    """Stop worker ``n`` cleanly (it stops its executors)."""
    name = _worker_name(n)
    pid = _cluster_pid(name)
    if pid:
        _terminate(pid, f"Spark worker {n}", str(_cluster_conf(name)), timeout)
    _pidfile(name).unlink(missing_ok=True)


def stop_cluster(timeout: float = 30) -> None:
    for n in range(1, SPARK_WORKERS + 1):
        stop_worker(n, timeout)
    pid = _cluster_pid("cluster-master")
    if pid:
        _terminate(pid, "the Spark master", str(_cluster_conf("cluster-master")), timeout)
    _pidfile("cluster-master").unlink(missing_ok=True)


def cluster_workers() -> list[dict]:
    """The workers the master knows of (ALIVE and DEAD ones): id, host, port, state, cores, coresused, ..."""
    return _cluster_state().get("workers", [])


# --------------------------------------------------------------------------
# whole stack
# --------------------------------------------------------------------------
COMPONENTS = ("postgres", "mariadb", "kafka", "connect", "metastore")
OPTIONAL = ("thriftserver", "trino", "s3", "cluster")  # started only when named
NEEDS = {"connect": ("kafka",), "metastore": ("postgres",), "thriftserver": ("metastore", "postgres"),
         "trino": ("metastore", "postgres")}


def _with_needs(components: Iterable[str] | None) -> set[str]:
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
    wanted = _with_needs(components)
    if wanted - {"s3", "cluster"}:
        _check_installed()
    if "s3" in wanted:
        _s3proxy_jar()  # installed?
    for d in (STACK_DIR, RUN_DIR, LOG_DIR, CONF_DIR):
        d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def remaining() -> float:
        return max(5.0, timeout - (time.monotonic() - t0))

    # start the independent servers together, then wait for each and start what needs them
    starts = {"postgres": _pg_start, "mariadb": _mariadb_start, "kafka": _kafka_start, "s3": _s3_start,
              "cluster": _cluster_start}
    for name, start in starts.items():
        if name in wanted:
            start()
    if "postgres" in wanted:
        _pg_wait(remaining())
    if "metastore" in wanted:
        _metastore_start()
    if "mariadb" in wanted:
        _mariadb_wait(remaining())
    if "kafka" in wanted:
        _kafka_wait(remaining())
    if "connect" in wanted:
        _connect_spawn()
        _connect_wait(remaining())
    if "metastore" in wanted:
        _metastore_wait(remaining())
    if "thriftserver" in wanted:
        _thriftserver_start(s3=_thriftserver_wants_s3("s3" in wanted))
    if "trino" in wanted:
        _trino_start()
    if "thriftserver" in wanted:
        _thriftserver_wait(remaining())
    if "trino" in wanted:
        _trino_wait(remaining())
    if "s3" in wanted:
        _s3_wait(remaining())
    if "cluster" in wanted:
        _cluster_wait(remaining())
    addresses = {"kafka": f"Kafka {KAFKA_BOOTSTRAP}", "connect": f"Connect {CONNECT_URL}",
                 "postgres": f"PostgreSQL {HOST}:{PG_PORT}", "mariadb": f"MariaDB {HOST}:{MARIADB_PORT}",
                 "metastore": f"Hive metastore {METASTORE_URI}", "thriftserver": f"Thrift server {THRIFTSERVER_JDBC_URL}",
                 "trino": f"Trino {TRINO_URL}", "s3": f"S3 {S3_ENDPOINT} (bucket {S3_BUCKET})",
                 "cluster": f"Spark master {SPARK_MASTER_URL} ({SPARK_WORKERS} workers)"}
    _log(f"stack up in {time.monotonic() - t0:.1f}s: "
         + ", ".join(addresses[c] for c in COMPONENTS + OPTIONAL if c in wanted))


def down(components: Iterable[str] | None = None) -> None:
    """Stop `components` (default: all, the optional ones too) cleanly (data stays under the stack dir); what
    needs a stopped component is stopped first."""
    wanted = set(components or COMPONENTS + OPTIONAL)
    _with_needs(wanted)  # names checked
    for name, needs in NEEDS.items():
        if wanted & set(needs):
            wanted.add(name)
    stops = {"cluster": stop_cluster, "s3": stop_s3, "thriftserver": stop_thriftserver, "trino": stop_trino, "connect": stop_connect, "metastore": _stop_metastores, "kafka": _kafka_stop, "mariadb": _mariadb_stop,
             "postgres": _pg_stop}
    for name, stop in stops.items():
        if name in wanted:
            stop()


def status() -> dict:
    """What runs: {component: {"pid": int|None, "ready": bool, ...}}."""
    out: dict = {}

    def safe(f):
        try:
            return bool(f())
        except Exception:  # noqa: BLE001
            return False

    out["postgres"] = {"pid": _pg_pid(), "ready": safe(_pg_ready), "address": f"{HOST}:{PG_PORT}"}
    out["mariadb"] = {"pid": _mariadb_pid(), "ready": safe(_mariadb_ready), "address": f"{HOST}:{MARIADB_PORT}"}
    out["kafka"] = {"pid": _kafka_pid(), "ready": safe(lambda: kafka_broker_count() > 0),
                    "address": KAFKA_BOOTSTRAP}
    out["connect"] = {"pid": _connect_pid(), "ready": safe(_connect_ready), "address": CONNECT_URL}
    out["metastore"] = {"pid": _metastore_pid(), "ready": safe(_metastore_ready), "address": METASTORE_URI}
    out["thriftserver"] = {"pid": _thriftserver_pid(), "ready": safe(_thriftserver_ready),
                           "address": THRIFTSERVER_JDBC_URL}
    out["trino"] = {"pid": _trino_pid(), "ready": safe(_trino_ready), "address": TRINO_URL}
    out["s3"] = {"pid": _s3_pid(), "ready": safe(_s3_ready), "address": f"{S3_ENDPOINT} bucket {S3_BUCKET}"}
    out["cluster"] = {"pid": _cluster_pid("cluster-master"), "ready": safe(_cluster_ready),
                      "address": f"{SPARK_MASTER_URL} (UI {SPARK_MASTER_WEBUI_URL})",
                      "workers": {n: _cluster_pid(_worker_name(n)) for n in range(1, SPARK_WORKERS + 1)}}
    if out["connect"]["ready"]:
        try:
            out["connect"]["connectors"] = {n: connector_status(n) for n in list_connectors()}
        except Exception as exc:  # noqa: BLE001
            out["connect"]["connectors_error"] = repr(exc)
    return out


# --------------------------------------------------------------------------
# connectors
# --------------------------------------------------------------------------
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
        "snapshot.mode": "initial",
        "tombstones.on.delete": "true",
        "decimal.handling.mode": "precise",
        "time.precision.mode": "adaptive_time_microseconds",
        "skipped.operations": "none",
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
        "snapshot.mode": "initial",
        "tombstones.on.delete": "true",
        "decimal.handling.mode": "precise",
        "time.precision.mode": "adaptive_time_microseconds",
        "skipped.operations": "none",
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
    _mariadb_root(f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{password}'; "
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
    out = _mariadb_root("SELECT ID, HOST FROM information_schema.PROCESSLIST "
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
                _mariadb_root(f"KILL {thread}")
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


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------
def _print_status(components: Iterable[str] | None = None) -> bool:
    st = status()
    all_ready = True
    shown = _with_needs(components) if components else set(COMPONENTS) | {c for c in OPTIONAL if st[c]["pid"]}
    for comp, info in st.items():
        if comp not in shown:
            continue
        pid = info["pid"]
        state = "ready" if info["ready"] else ("starting/unhealthy" if pid else "stopped")
        all_ready &= bool(info["ready"])
        print(f"{comp:12s} {state:18s} pid={pid or '-':<8} {info['address']}")
        for n, wpid in info.get("workers", {}).items():
            print(f"          worker {n}: pid={wpid or '-'} {HOST}:{_worker_port(n)}")
        for cname, cst in info.get("connectors", {}).items():
            tasks = ",".join(t["state"] for t in cst.get("tasks", []))
            print(f"          connector {cname}: {cst['connector']['state']} tasks=[{tasks}]")
    print(f"state dir: {STACK_DIR}")
    return all_ready


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="stack.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["up", "down", "status", "connect-pg", "connect-mariadb"])
    ap.add_argument("components", nargs="*", metavar="COMPONENT",
                    help=f"up/down/status: some of {', '.join(COMPONENTS + OPTIONAL)} (default: all but "
                         f"{', '.join(OPTIONAL)})")
    args = ap.parse_args(argv)
    try:
        if args.command == "up":
            up(components=args.components)
            _print_status(args.components)
        elif args.command == "down":
            down(args.components)
            _print_status(args.components)
        elif args.command == "status":
            return 0 if _print_status(args.components) else 3
        elif args.command == "connect-pg":
            s = POSTGRES
            os.environ["PGPASSWORD"] = s.password
            os.execvp("psql", ["psql", "-h", s.host, "-p", str(s.port), "-U", s.user, "-d", s.database])
        elif args.command == "connect-mariadb":
            s = MARIADB
            os.environ["MYSQL_PWD"] = s.password
            os.execvp("mariadb", ["mariadb", "--no-defaults", "--protocol=tcp", "-h", s.host, "-P", str(s.port),
                                  "-u", s.user, s.database])
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
