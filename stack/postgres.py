"""PostgreSQL: the source database of the PostgreSQL connector (``lake_src``, user ``lake``), and the metastore's
tables (``metastore``, user ``hive``). Its data under .stack/pg, its superuser reached on a private socket."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path

from .component import Component
from .install import pg_bindir
from .processes import is_root, log, pid_alive, pidfile, poll, read_pidfile, run, spawn, terminate
from .settings import HOST, PG_PORT, POSTGRES, STACK_DIR, StackError

# .stack/pg, or (a symlink to) a dir outside it when the postgres OS user
# cannot reach .stack (see _dir_for_postgres_user)
PG_DIR = (STACK_DIR / "pg").resolve()
PG_DATA = PG_DIR / "data"
PG_SOCK_DIR = PG_DIR / "run"


def _as_owner(cmd: Sequence[str]) -> list[str]:
    # PostgreSQL refuses to run as root: run its tools as the postgres user.
    return ["runuser", "-u", "postgres", "--", *cmd] if is_root() else list(cmd)


def _user() -> str | None:
    return "postgres" if is_root() else None


def _chown_postgres(*paths: Path) -> None:
    if is_root():
        for p in paths:
            shutil.chown(p, "postgres", "postgres")


def _postgres_can_use(path: Path) -> bool:
    if not is_root():
        return True
    r = run(["runuser", "-u", "postgres", "--", "test", "-x", str(path)], check=False)
    return r.returncode == 0


def _dir_for_postgres_user() -> None:
    """The postgres OS user must reach its data dir. When a parent of the
    stack dir is closed to it (e.g. a checkout under /root), keep the cluster
    in /var/tmp/lakecompact-pg-<hash> and link it as .stack/pg."""
    global PG_DIR, PG_DATA, PG_SOCK_DIR
    link = STACK_DIR / "pg"
    if link.exists() or link.is_symlink() or _postgres_can_use(STACK_DIR):
        return
    alt = Path("/var/tmp") / f"lakecompact-pg-{hashlib.sha1(str(STACK_DIR).encode()).hexdigest()[:10]}"
    alt.mkdir(parents=True, exist_ok=True)
    link.symlink_to(alt)
    log(f"the postgres user cannot reach {STACK_DIR}: PostgreSQL data in {alt} (linked as {link})")
    PG_DIR, PG_DATA, PG_SOCK_DIR = alt, alt / "data", alt / "run"


def _init() -> None:
    if (PG_DATA / "PG_VERSION").exists():
        return
    _dir_for_postgres_user()
    log(f"initdb {PG_DATA}")
    PG_DATA.mkdir(parents=True, exist_ok=True)
    PG_SOCK_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(PG_DATA, 0o700)
    _chown_postgres(PG_DIR, PG_DATA, PG_SOCK_DIR)
    if not _postgres_can_use(PG_DATA):
        raise StackError(f"the postgres OS user cannot use {PG_DATA}")
    run(_as_owner([str(pg_bindir() / "initdb"), "-D", str(PG_DATA), "-U", "postgres",
                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"]),
        timeout=300, cwd="/")
    with open(PG_DATA / "postgresql.conf", "a") as f:
        f.write("\n# lakecompact stack settings (rewritten by stack.py up)\n"
                "include_if_exists = 'lakecompact_stack.conf'\n")


def _write_conf() -> None:
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


def psql_admin(sql: str, database: str = "postgres") -> str:
    """Run SQL as the postgres superuser over the private unix socket."""
    p = run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", str(PG_SOCK_DIR),
             "-p", str(PG_PORT), "-U", "postgres", "-d", database, "-c", sql])
    return p.stdout.strip()


def ensure_role(user: str, password: str, attributes: str) -> None:
    """The role ``user`` made, or altered, to have ``attributes`` (e.g. "LOGIN") and ``password``."""
    psql_admin(
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{user}') THEN "
        f"CREATE ROLE {user} {attributes} PASSWORD '{password}'; END IF; END $$; "
        f"ALTER ROLE {user} {attributes} PASSWORD '{password}';")


def _setup() -> None:
    u, pw, db = POSTGRES.user, POSTGRES.password, POSTGRES.database
    ensure_role(u, pw, "LOGIN SUPERUSER REPLICATION")
    if psql_admin(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") != "1":
        psql_admin(f"CREATE DATABASE {db} OWNER {u}")


def _login_works() -> bool:
    """Password auth over TCP works for the tests' user."""
    try:
        return pg_sql("SELECT 1") == [("1",)]
    except StackError:
        return False


def pg_sql(sql: str, *, database: str | None = None) -> list[tuple[str, ...]]:
    """Run SQL on the stack's PostgreSQL as ``lake`` (over TCP, password auth).
    Returns the rows of the result sets as tuples of strings (NULL -> '')."""
    s = POSTGRES
    p = run(["psql", "-X", "-q", "-t", "-A", "-F", "\x1f", "-v", "ON_ERROR_STOP=1",
             "-h", s.host, "-p", str(s.port), "-U", s.user, "-d", database or s.database, "-f", "-"],
            input=sql, env={"PGPASSWORD": s.password, "PGCONNECT_TIMEOUT": "5"})
    return [tuple(line.split("\x1f")) for line in p.stdout.splitlines() if line != ""]


class Postgres(Component):
    """The postmaster, as the postgres OS user when we are root; its pid in its data dir's postmaster.pid."""

    name, title = "postgres", "PostgreSQL"

    @property
    def address(self) -> str:
        return f"{HOST}:{PG_PORT}"

    def marker(self) -> str:
        return str(PG_DATA)

    def pid(self) -> int | None:
        pid = read_pidfile(PG_DATA / "postmaster.pid")
        if pid and pid_alive(pid, self.marker()):
            return pid
        return None

    def start(self) -> bool:
        if self.pid():
            return False
        _init()
        _write_conf()
        PG_SOCK_DIR.mkdir(parents=True, exist_ok=True)
        _chown_postgres(PG_SOCK_DIR)
        stale = PG_DATA / "postmaster.pid"
        if stale.exists():  # left by a killed server whose pid is gone
            stale.unlink()
        log(f"starting PostgreSQL on {HOST}:{PG_PORT}")
        # the postmaster itself, as the postgres user; its log (stderr) goes to
        # logs/postgres.log, opened by us
        spawn("postgres", [str(pg_bindir() / "postgres"), "-D", str(PG_DATA)], user=_user())
        return True

    def ready(self) -> bool:
        p = run(["pg_isready", "-q", "-h", HOST, "-p", str(PG_PORT)], check=False, timeout=10)
        return p.returncode == 0

    def wait(self, timeout: float) -> None:
        super().wait(timeout)
        if not _login_works():  # set up only when needed: two processes altering the role at once fail
            _setup()
        poll(_login_works, 30, "PostgreSQL login as lake")

    def stop(self, timeout: float | None = None) -> None:
        pid = self.pid()
        if pid:
            # SIGINT = "fast" shutdown (what pg_ctl stop -m fast sends)
            log(f"stopping PostgreSQL (pid {pid})")
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                poll(lambda: not pid_alive(pid, str(PG_DATA)), self.stop_timeout if timeout is None else timeout,
                     "PostgreSQL to exit")
            except StackError:
                terminate(pid, "PostgreSQL", str(PG_DATA), 5)
        pidfile("postgres").unlink(missing_ok=True)


SERVICE = Postgres()
