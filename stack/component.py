"""The one shape every service of the stack has: ``start``, ``ready``, ``stop`` and ``logs``, and what is built on
them once for all (its pid, waiting until it is ready, its status).

A component is one module of this package (postgres, mariadb, kafka, connect, metastore, thriftserver, trino, s3,
cluster), holding one subclass of :class:`Component` and an instance of it, ``SERVICE``. Its process is told from
another that reuses its pid by a marker in its command line; its pid is in ``.stack/run/<name>.pid`` and its output
in ``.stack/logs/<name>.log``.
"""
from __future__ import annotations

from pathlib import Path

from .processes import died, pid_alive, pidfile, poll, read_pidfile, service_marker, terminate
from .settings import LOG_DIR


class Component:
    """One service of the stack. Subclasses give ``name``, ``title``, ``address``, ``start`` and ``ready``; the
    rest has defaults that fit a JVM started by :func:`stack.processes.spawn` with its ``service_marker``."""

    name: str  # on the command line; its pid file and log are named after it
    title: str  # in messages: "Kafka", "the Hive metastore"
    stop_timeout: float = 60  # seconds from SIGTERM to SIGKILL when stopped
    poll_interval: float = 0.25  # between two ready() while waiting

    @property
    def address(self) -> str:
        """Where it answers, as `status` shows it."""
        raise NotImplementedError

    def start(self) -> bool:
        """Start it when it does not run (without waiting): True when this call started it."""
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether it serves (it may raise, which counts as not ready)."""
        raise NotImplementedError

    def stop(self, timeout: float | None = None) -> None:
        """Stop it (SIGTERM, SIGKILL after ``timeout`` seconds) and forget its pid; its data stays."""
        pid = self.pid()
        if pid:
            terminate(pid, self.title, self.marker(), self.stop_timeout if timeout is None else timeout)
        pidfile(self.name).unlink(missing_ok=True)

    def logs(self) -> Path:
        """Its log file: what it printed (appended at every start)."""
        return LOG_DIR / f"{self.name}.log"

    def marker(self) -> str:
        """What its command line holds, that a process which reused its pid's would not."""
        return service_marker(self.name)

    def pid(self) -> int | None:
        """Its pid, if it runs."""
        pid = read_pidfile(pidfile(self.name))
        if pid and pid_alive(pid, self.marker()):
            return pid
        return None

    def waiting_for(self) -> str:
        """What `wait` says it waits for, in its timeout error."""
        return f"{self.title} on {self.address}"

    def died(self) -> str | None:
        """While waiting: an error text once the process it started is gone."""
        return died(self.name)

    def wait(self, timeout: float) -> None:
        """Poll until it is ready (StackError after ``timeout`` seconds, or at once when its process died)."""
        poll(self.ready, timeout, self.waiting_for(), interval=self.poll_interval, log=self.logs(),
             fail_fast=self.died)

    def status(self) -> dict:
        """{"pid": int | None, "ready": bool, "address": str}."""
        return {"pid": self.pid(), "ready": answers(self.ready), "address": self.address}


def answers(check) -> bool:
    """``check()`` as a bool, False when it raises."""
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - a service that cannot be asked is not ready
        return False
