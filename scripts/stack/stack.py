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
(``jdbc:hive2://127.0.0.1:19010/default``), and trino: a Trino server whose Hive
connector (catalog ``hive``) reads the same metastore (``http://127.0.0.1:19020``).
``up metastore`` starts only what the
metastore needs (PostgreSQL and it); lakecompact then uses it with
``[metastore] uri = "thrift://127.0.0.1:19083"``.

``connect-pg`` / ``connect-mariadb`` open psql / the mariadb client on the
stack's ``lake_src`` database as user ``lake``.

Importable (stdlib + requests)::

    import stack            # with scripts/stack on sys.path
    stack.up()
    stack.register_postgres_connector("pg1", "pg1", ["public.orders"])
    stack.wait_connector_running("pg1")
    stack.down()

Needs ``scripts/stack/install.sh`` to have run (Debian packages + jars).

Environment overrides (read at import time):

    LAKECOMPACT_STACK_DIR        state dir (default <project root>/.stack)
    LAKECOMPACT_KAFKA_PORT       19092    LAKECOMPACT_KAFKA_CONTROLLER_PORT 19093
    LAKECOMPACT_CONNECT_PORT     18083    LAKECOMPACT_PG_PORT              15432
    LAKECOMPACT_MARIADB_PORT     13306    LAKECOMPACT_METASTORE_PORT       19083
    LAKECOMPACT_KAFKA_HEAP / LAKECOMPACT_CONNECT_HEAP   JVM -Xmx (default 512m)
    LAKECOMPACT_METASTORE_HEAP                          JVM -Xmx (default 384m)
    LAKECOMPACT_THRIFTSERVER_PORT 19010  LAKECOMPACT_THRIFTSERVER_HEAP (default 768m)
    LAKECOMPACT_TRINO_PORT       19020    LAKECOMPACT_TRINO_HEAP (default 1G)
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
METASTORE_HEAP = os.environ.get("LAKECOMPACT_METASTORE_HEAP", "384m")
THRIFTSERVER_PORT = _env_int("LAKECOMPACT_THRIFTSERVER_PORT", 19010)
THRIFTSERVER_HEAP = os.environ.get("LAKECOMPACT_THRIFTSERVER_HEAP", "768m")
TRINO_PORT = _env_int("LAKECOMPACT_TRINO_PORT", 19020)
TRINO_HEAP = os.environ.get("LAKECOMPACT_TRINO_HEAP", "1G")
KAFKA_HEAP = os.environ.get("LAKECOMPACT_KAFKA_HEAP", "512m")
CONNECT_HEAP = os.environ.get("LAKECOMPACT_CONNECT_HEAP", "512m")

KAFKA_BOOTSTRAP = f"{HOST}:{KAFKA_PORT}"
CONNECT_URL = f"http://{HOST}:{CONNECT_PORT}"
METASTORE_URI = f"thrift://{HOST}:{METASTORE_PORT}"
THRIFTSERVER_JDBC_URL = f"jdbc:hive2://{HOST}:{THRIFTSERVER_PORT}/default"
TRINO_URL = f"http://{HOST}:{TRINO_PORT}"
TRINO_CATALOG = "hive"  # the Hive connector's catalog, on the stack's metastore

JARS_DIR = STACK_DIR / "jars"
KAFKA_JARS = JARS_DIR / "kafka"
PLUGINS_DIR = JARS_DIR / "connect-plugins"
SPARK_KAFKA_JARS_DIR = JARS_DIR / "spark-kafka"
SPARK_AVRO_JARS_DIR = JARS_DIR / "spark-avro"
METASTORE_JARS = JARS_DIR / "hive-metastore"  # install.sh: jars, home/ (the unpacked tarball), launcher/
METASTORE_HOME = METASTORE_JARS / "home"
METASTORE_LAUNCHER = METASTORE_JARS / "launcher"
TRINO_JARS = JARS_DIR / "trino"  # install.sh: the CLI jar, and home/ (the server with its Hive connector)
TRINO_HOME = TRINO_JARS / "home"
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


def _spawn(name: str, cmd: Sequence[str], env: dict | None = None, user: str | None = None) -> int:
    """Start a detached background process (as OS ``user`` if given), output
    to logs/<name>.log, pid in run/<name>.pid."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / f"{name}.log"
    with open(log_path, "ab") as logf:
        logf.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(cmd)}\n".encode())
        logf.flush()
        ids = {"user": user, "group": user, "extra_groups": []} if user else {}
        proc = subprocess.Popen(list(cmd), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True, cwd="/" if user else str(STACK_DIR),
                                env={**os.environ, **(env or {})}, **ids)
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
              SPARK_KAFKA_JARS_DIR, METASTORE_JARS, METASTORE_HOME / "lib", METASTORE_LAUNCHER):
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
    _pg_setup()
    # password auth over TCP works for the tests' user
    poll(lambda: pg_sql("SELECT 1") == [("1",)], 30, "PostgreSQL login as lake")


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
    # the conf dir first: metastore-site.xml is found on the class path
    return ":".join([str(_metastore_conf_dir()), f"{METASTORE_HOME}/lib/*", f"{METASTORE_JARS}/*",
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


def _metastore_pid() -> int | None:
    return _live_pid("metastore")


def _metastore_ready() -> bool:
    """The port answers: the service opens it only once its database is reachable."""
    return _port_answers(METASTORE_PORT)


def _metastore_start() -> bool:
    """Needs PostgreSQL ready."""
    if _metastore_pid():
        return False
    _metastore_write_conf()
    _metastore_setup()
    _log(f"starting the Hive metastore on {METASTORE_URI}")
    _spawn("metastore", _java_cmd("metastore", METASTORE_HEAP, "org.apache.hadoop.hive.metastore.LoopbackMetastore",
                                  HOST, str(METASTORE_PORT), classpath=_metastore_classpath()))
    return True


def _metastore_wait(timeout: float) -> None:
    poll(_metastore_ready, timeout, f"Hive metastore on {METASTORE_URI}", log=LOG_DIR / "metastore.log",
         fail_fast=lambda: _died("metastore"))


def start_metastore(timeout: float = 120) -> None:
    """Start (or restart after stop_metastore) the metastore; PostgreSQL must be up."""
    _metastore_start()
    _metastore_wait(timeout)


def stop_metastore(timeout: float = 60) -> None:
    _stop_service("metastore", "Hive metastore", timeout)


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


def _thriftserver_start() -> bool:
    """Needs the metastore ready."""
    if _thriftserver_pid():
        return False
    _write_common_conf()
    work = STACK_DIR / "thriftserver"
    work.mkdir(parents=True, exist_ok=True)
    _log(f"starting Spark's Thrift server on {THRIFTSERVER_JDBC_URL}")
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


def _trino_write_conf() -> Path:
    """etc/ for the launcher: one node that is coordinator and worker, on loopback, memory sized for 2 cores."""
    etc = CONF_DIR / "trino"
    (etc / "catalog").mkdir(parents=True, exist_ok=True)
    data = STACK_DIR / "trino" / "data"
    data.mkdir(parents=True, exist_ok=True)
    files = {
        "node.properties": f"node.environment=lakecompact\nnode.id=lakecompact-stack\nnode.data-dir={data}\n"
                           f"node.bind-ip={HOST}\nnode.internal-address={HOST}\n",
        "jvm.config": f"-server\n-Xmx{TRINO_HEAP}\n-XX:+UseG1GC\n-XX:+ExitOnOutOfMemoryError\n"
                      f"-Djdk.attach.allowAttachSelf=true\n{_service_marker('trino')}\n",
        # query memory + the heap's headroom (30%) must fit the heap
        "config.properties": f"coordinator=true\nnode-scheduler.include-coordinator=true\n"
                             f"http-server.http.port={TRINO_PORT}\ndiscovery.uri={TRINO_URL}\n"
                             "query.max-memory=384MB\nquery.max-memory-per-node=384MB\n"
                             "query.max-total-memory-per-node=512MB\n",
        "log.properties": "io.trino=WARN\n",
        f"catalog/{TRINO_CATALOG}.properties": f"connector.name=hive\nhive.metastore.uri={METASTORE_URI}\n",
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
    etc = _trino_write_conf()
    _log(f"starting Trino on {TRINO_URL} (catalog {TRINO_CATALOG}: the metastore {METASTORE_URI})")
    _spawn("trino", [str(TRINO_HOME / "bin" / "launcher"), "run", f"--etc-dir={etc}"])
    return True


def _trino_wait(timeout: float) -> None:
    poll(_trino_ready, timeout, f"Trino on {TRINO_URL}", log=LOG_DIR / "trino.log",
         fail_fast=lambda: _died("trino"))


def stop_trino(timeout: float = 60) -> None:
    _stop_service("trino", "Trino", timeout)


def trino(sql: str, schema: str = "default", timeout: float = 300) -> list[dict]:
    """Rows of one statement run by Trino's command-line client in the stack's catalog, as JSON objects."""
    [cli] = TRINO_JARS.glob("trino-cli-*-executable.jar")
    found = _run(["java", "-jar", str(cli), "--server", TRINO_URL, "--catalog", TRINO_CATALOG, "--schema", schema,
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
# whole stack
# --------------------------------------------------------------------------
COMPONENTS = ("postgres", "mariadb", "kafka", "connect", "metastore")
OPTIONAL = ("thriftserver", "trino")  # started only when named
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
    _check_installed()
    wanted = _with_needs(components)
    for d in (STACK_DIR, RUN_DIR, LOG_DIR, CONF_DIR):
        d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def remaining() -> float:
        return max(5.0, timeout - (time.monotonic() - t0))

    # start the independent servers together, then wait for each and start what needs them
    starts = {"postgres": _pg_start, "mariadb": _mariadb_start, "kafka": _kafka_start}
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
        _thriftserver_start()
    if "trino" in wanted:
        _trino_start()
    if "thriftserver" in wanted:
        _thriftserver_wait(remaining())
    if "trino" in wanted:
        _trino_wait(remaining())
    addresses = {"kafka": f"Kafka {KAFKA_BOOTSTRAP}", "connect": f"Connect {CONNECT_URL}",
                 "postgres": f"PostgreSQL {HOST}:{PG_PORT}", "mariadb": f"MariaDB {HOST}:{MARIADB_PORT}",
                 "metastore": f"Hive metastore {METASTORE_URI}", "thriftserver": f"Thrift server {THRIFTSERVER_JDBC_URL}",
                 "trino": f"Trino {TRINO_URL}"}
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
    stops = {"thriftserver": stop_thriftserver, "trino": stop_trino, "connect": stop_connect, "metastore": stop_metastore, "kafka": _kafka_stop, "mariadb": _mariadb_stop,
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
        "database.user": MARIADB.user,
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
    ("db.table"). Topics: <topic_prefix>.<db>.<table>."""
    return _put_connector(name, mariadb_connector_config(name, topic_prefix, tables, **overrides))


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


def delete_connector(name: str, timeout: float = 60, cleanup: bool = True) -> None:
    """Delete a connector (no error if absent) and wait until it is gone. With
    ``cleanup``, a PostgreSQL connector's replication slot and publication are
    dropped too, so that no slot keeps WAL around."""
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
