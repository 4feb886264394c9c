"""Local end-to-end stack for lakecompact: PostgreSQL + MariaDB + Kafka (KRaft)
+ Kafka Connect with Debezium + a Hive metastore thrift service (backed by the
stack's PostgreSQL), all on 127.0.0.1, all state under .stack/.

The command line (``python3 scripts/stack/stack.py``, or ``python3 -m stack``): up, down and status of components,
and connect-pg / connect-mariadb, a client on a source database.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from .cluster import worker_port
from .control import COMPONENTS, OPTIONAL, down, status, up, with_needs
from .settings import HOST, MARIADB, POSTGRES, STACK_DIR, StackError


def _print_status(components: Iterable[str] | None = None) -> bool:
    st = status()
    all_ready = True
    shown = with_needs(components) if components else set(COMPONENTS) | {c for c in OPTIONAL if st[c]["pid"]}
    for comp, info in st.items():
        if comp not in shown:
            continue
        pid = info["pid"]
        state = "ready" if info["ready"] else ("starting/unhealthy" if pid else "stopped")
        all_ready &= bool(info["ready"])
        print(f"{comp:12s} {state:18s} pid={pid or '-':<8} {info['address']}")
        for n, wpid in info.get("workers", {}).items():
            print(f"          worker {n}: pid={wpid or '-'} {HOST}:{worker_port(n)}")
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
