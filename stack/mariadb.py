"""MariaDB: the source database of the MariaDB connector (``lake_src``, user ``lake``), its binlog in row format.
Its data under .stack/mariadb, its root reached on a private socket."""
from __future__ import annotations

import shutil
import subprocess

from .component import Component
from .install import mariadbd
from .processes import is_root, log, poll, run, spawn, tail
from .settings import HOST, LOG_DIR, MARIADB, MARIADB_DATA, MARIADB_PORT, MARIADB_SOCK, RUN_DIR, StackError


def mariadb_root(sql: str) -> str:
    """Run SQL as MariaDB's root over the private unix socket."""
    p = run(["mariadb", "--no-defaults", "-S", str(MARIADB_SOCK), "-u", "root", "-B", "-N", "-e", sql])
    return p.stdout.strip()


def _setup() -> None:
    s = MARIADB
    # ALL PRIVILEGES covers what Debezium needs (SELECT, RELOAD, SHOW DATABASES,
    # REPLICATION SLAVE, REPLICATION CLIENT/BINLOG MONITOR, LOCK TABLES) and
    # lets the tests create and drop their tables.
    mariadb_root(
        f"CREATE DATABASE IF NOT EXISTS {s.database} CHARACTER SET utf8mb4; "
        f"CREATE USER IF NOT EXISTS '{s.user}'@'%' IDENTIFIED BY '{s.password}'; "
        f"ALTER USER '{s.user}'@'%' IDENTIFIED BY '{s.password}'; "
        f"GRANT ALL PRIVILEGES ON *.* TO '{s.user}'@'%'; "
        "FLUSH PRIVILEGES;")


def mariadb_sql(sql: str, *, database: str | None = None) -> list[tuple[str, ...]]:
    """Run SQL on the stack's MariaDB as ``lake`` over TCP. Returns the rows of
    the result sets as tuples of strings (NULL -> 'NULL')."""
    s = MARIADB
    p = run(["mariadb", "--no-defaults", "--protocol=tcp", "-h", s.host, "-P", str(s.port), "-u", s.user,
             "-D", database or s.database, "-B", "-N", "--connect-timeout=5"],
            input=sql, env={"MYSQL_PWD": s.password})
    return [tuple(line.split("\t")) for line in p.stdout.splitlines() if line != ""]


class MariaDb(Component):
    """mariadbd, its data dir created by mariadb-install-db at the first start."""

    name, title = "mariadb", "MariaDB"

    @property
    def address(self) -> str:
        return f"{HOST}:{MARIADB_PORT}"

    def marker(self) -> str:
        return str(MARIADB_DATA)

    def start(self) -> bool:
        if self.pid():
            return False
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        user = ["--user=root"] if is_root() else []
        if not (MARIADB_DATA / "mysql").is_dir():
            log(f"mariadb-install-db {MARIADB_DATA}")
            MARIADB_DATA.mkdir(parents=True, exist_ok=True)
            with open(LOG_DIR / "mariadb-install-db.log", "ab") as f:
                r = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={MARIADB_DATA}", *user,
                                    "--auth-root-authentication-method=normal", "--skip-test-db",
                                    "--skip-name-resolve"], stdout=f, stderr=subprocess.STDOUT, timeout=300,
                                   check=False)
            if r.returncode != 0:
                shutil.rmtree(MARIADB_DATA, ignore_errors=True)
                raise StackError("mariadb-install-db failed\n" + tail(LOG_DIR / "mariadb-install-db.log"))
        for stale in (MARIADB_SOCK, RUN_DIR / "mariadb.sock.lock"):
            if stale.exists():
                stale.unlink()
        log(f"starting MariaDB on {HOST}:{MARIADB_PORT}")
        spawn("mariadb", [
            mariadbd(), "--no-defaults", f"--datadir={MARIADB_DATA}", *user,
            f"--port={MARIADB_PORT}", f"--bind-address={HOST}", f"--socket={MARIADB_SOCK}",
            f"--pid-file={RUN_DIR / 'mariadbd.pid'}", "--skip-name-resolve",
            f"--log-bin={MARIADB_DATA / 'binlog'}", "--binlog-format=ROW", "--binlog-row-image=FULL",
            "--server-id=1", "--expire-logs-days=2", "--innodb-buffer-pool-size=128M",
            "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
            "--max-connections=100",
        ])
        return True

    def ready(self) -> bool:
        p = run(["mariadb-admin", "--no-defaults", "-S", str(MARIADB_SOCK), "-u", "root",
                 "--connect-timeout=2", "ping"], check=False, timeout=10)
        return p.returncode == 0

    def wait(self, timeout: float) -> None:
        super().wait(timeout)
        _setup()
        poll(lambda: mariadb_sql("SELECT 1") == [("1",)], 30, "MariaDB login as lake")


SERVICE = MariaDb()
