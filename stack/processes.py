"""The stack's processes: polling until something holds, pid files, starting a detached service with its log,
stopping one (SIGTERM, then SIGKILL), running a command, and the JVM command line its Java services share."""
from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .settings import CONF_DIR, HOST, KAFKA_JARS, LOG_DIR, RUN_DIR, STACK_DIR, StackError


def log(msg: str) -> None:
    print(f"[stack] {msg}", file=sys.stderr, flush=True)


def poll(check: Callable[[], object], timeout: float, what: str, interval: float = 0.25,
         fail_fast: Callable[[], str | None] | None = None, log: Path | None = None, *,
         not_yet: tuple[type[BaseException], ...] = (Exception,), failure: type[Exception] = StackError,
         detail: Callable[[], str] | None = None):
    """Call ``check`` until it returns a truthy value (returned) or ``timeout``
    seconds pass (``failure``, StackError unless the caller says). Exceptions of
    ``not_yet`` from ``check`` count as "not yet"; others propagate.
    ``fail_fast`` may return an error text to stop early (e.g. process died);
    ``log`` is a log file whose tail goes into the timeout error, ``detail``
    what else it should show. tests/support/poll.py is the tests' call of it."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except not_yet as exc:
            last_exc = exc
        if fail_fast is not None:
            err = fail_fast()
            if err:
                raise failure(f"{what}: {err}")
        if time.monotonic() >= deadline:
            raise failure(f"timed out after {timeout:.0f}s waiting for {what}"
                          + (f" (last error: {last_exc!r})" if last_exc else "")
                          + (f"\n{tail(log)}" if log else "") + (f"\n{detail()}" if detail else ""))
        time.sleep(interval)  # polling the condition, not waiting for it


def tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- last lines of {path} ---\n" + "\n".join(lines[-n:])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pid_alive(pid: int, marker: str | None = None) -> bool:
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
    cmd = cmdline(pid)
    # an empty cmdline is a process in the middle of execve (the java
    # launcher re-execs itself): alive, and not yet checkable
    return not cmd.strip() or marker in cmd


def read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pidfile(name: str) -> Path:
    return RUN_DIR / f"{name}.pid"


def died(name: str) -> str | None:
    """For fail-fast while waiting: an error text if the process we started
    (pid file ``name``) is gone."""
    pid = read_pidfile(pidfile(name))
    if pid and pid_alive(pid):
        return None
    return f"{name} exited\n" + tail(LOG_DIR / f"{name}.log")


def spawn(name: str, cmd: Sequence[str], env: dict | None = None, user: str | None = None,
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
    pidfile(name).write_text(f"{proc.pid}\n")
    return proc.pid


def terminate(pid: int, what: str, marker: str | None, timeout: float) -> None:
    """SIGTERM, wait by polling, then SIGKILL."""
    if not pid_alive(pid, marker):
        return
    log(f"stopping {what} (pid {pid})")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        poll(lambda: not pid_alive(pid, marker), timeout, f"{what} to exit")
    except StackError:
        log(f"{what} did not exit within {timeout:.0f}s: SIGKILL")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        poll(lambda: not pid_alive(pid, marker), 30, f"{what} to die after SIGKILL")


def run(cmd: Sequence[str], *, input: str | None = None, env: dict | None = None, check: bool = True,
        timeout: float = 120, cwd: str | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(list(cmd), input=input, capture_output=True, text=True, check=False,
                       env={**os.environ, **(env or {})}, timeout=timeout, cwd=cwd)
    if check and p.returncode != 0:
        raise StackError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def is_root() -> bool:
    return os.geteuid() == 0


def service_marker(name: str) -> str:
    """The system property the stack's `name` JVM is started with: its pid is told from a reused one by it."""
    return f"-Dlakecompact.stack={name}@{STACK_DIR}"


def port_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


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


# the Java services' log4j2 settings (Kafka, Connect, the metastore)
LOG4J2 = """\
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


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    j = shutil.which("java")
    if not j:
        raise StackError("java not found: run scripts/stack/install.sh")
    return j


def java_cmd(name: str, heap: str, main: str, *args: str, classpath: str = f"{KAFKA_JARS}/*") -> list[str]:
    return [java(), "-Xms128m", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=50",
            "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
            service_marker(name),  # marker for pid checks
            f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={LOG_DIR}",
            "-cp", classpath, main, *args]


def write_common_conf() -> None:
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "log4j2.properties").write_text(LOG4J2)

