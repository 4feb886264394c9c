"""What the benchmark harness measures of the machine and of the processes it starts: the machine's
description, the CPU time and memory of a process tree (from /proc), the CPU other processes take meanwhile,
and the times lakecompact reports in a step's log.

Standard library only: the engine processes import it too (benchmarks/engines/lakecompact_inproc.py).
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def loud(message: str) -> None:
    bar = "!" * 100
    print(f"\n{bar}\n!!! {message}\n{bar}\n", file=sys.stderr, flush=True)


# -- the machine ---------------------------------------------------------------------------------------------
def machine() -> dict:
    def first(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except Exception:  # noqa: BLE001
            return None

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    commit = first(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "lakecompact"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(), "memory_gib": round(mem_kb / 1024 / 1024, 1), "cpu": cpu,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "java": first(["java", "-version"]), "python": platform.python_version(),
        "lakecompact_commit": f"{commit}{' + uncommitted changes in lakecompact/' if dirty else ''}",
    }


# -- processes -----------------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by pid and its descendants that are still running (python + its JVM + the JVM's
    Python workers): a step's own CPU, less sensitive than its wall time to other processes on the machine."""
    tree, todo, ticks = _children(), [pid], 0
    while todo:
        p = todo.pop()
        ticks += _cpu_ticks(p)
        todo.extend(tree.get(p, []))
    return ticks / os.sysconf("SC_CLK_TCK")


def _memory_kb(pid: int) -> tuple[int, int]:
    rss = hwm = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def wait_for_quiet(max_wait: float, threshold: float = 0.35) -> float:
    """Wait (up to max_wait s) until other processes use less than `threshold` of the machine's CPUs over 5 s;
    returns the share seen last. The machine is shared (another engineer's test suite): this keeps the runs apart."""
    deadline = time.monotonic() + max_wait
    while True:
        busy0, total0 = _cpu_jiffies()
        time.sleep(5)
        busy1, total1 = _cpu_jiffies()
        share = (busy1 - busy0) / max(1, total1 - total0)
        if share < threshold or time.monotonic() > deadline:
            return round(share, 2)
        log(f"machine busy ({share:.0%} of the CPUs used by other processes): waiting")


def run_process(cmd: list[str], log_path: Path, env: dict | None = None, timeout: float = 4 * 3600,
                stdout_path: Path | None = None) -> dict:
    """Run cmd (its own process group); wall time, exit code, and the peak memory of its process tree
    (python + the JVM it starts): the sampled peak of the summed RSS, and the sum of each process's VmHWM.
    other_cpu_share: the part of the machine's CPU time during the run that other processes used (noise)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    busy0, total0 = _cpu_jiffies()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    full_env.update(env or {})
    # this checkout's lakecompact, which the results name, not the clone `pip install -e` last pointed at
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full_env.get("PYTHONPATH")]))
    with open(log_path, "w") as err, open(stdout_path or log_path.with_suffix(".out"), "w") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=full_env, cwd=str(ROOT), start_new_session=True)
        peak_rss, hwm, ticks, status, rusage = 0, {}, {}, None, None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            tree, todo, total = _children(), [proc.pid], 0
            while todo:
                p = todo.pop()
                rss, h = _memory_kb(p)
                total += rss
                hwm[p] = max(hwm.get(p, 0), h)
                ticks[p] = max(ticks.get(p, 0), _cpu_ticks(p))
                todo.extend(tree.get(p, []))
            peak_rss = max(peak_rss, total)
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, 9)
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    busy1, total1 = _cpu_jiffies()
    tick = os.sysconf("SC_CLK_TCK")
    ours = max(rusage.ru_utime + rusage.ru_stime, sum(ticks.values()) / tick)  # the JVM is not always reaped
    machine_busy = (busy1 - busy0) / tick
    other = max(0.0, machine_busy - ours) / max(1e-9, (total1 - total0) / tick)
    return {"rc": proc.returncode, "seconds": round(seconds, 3), "cpu_seconds": round(ours, 1),
            "other_cpu_share": round(other, 2), "peak_rss_mb": round(peak_rss / 1024),
            "peak_hwm_sum_mb": round(sum(hwm.values()) / 1024), "python_maxrss_mb": round(rusage.ru_maxrss / 1024),
            "log": str(log_path.relative_to(ROOT)) if log_path.is_relative_to(ROOT) else str(log_path),
            "log_path": str(log_path)}


class ServiceCpu:
    """The CPU time, while a step runs, of the processes that work for it outside its own process tree: the
    executors the stack's workers start (their children, sampled every 0.5 s as they come and go) and the long-lived
    services (S3, the metastore: their CPU time's growth). Counted as the step's own, not as other processes' noise."""

    def __init__(self, workers: list[int], services: list[int]):
        self.workers, self.services = workers, services
        self.start = {pid: _cpu_ticks(pid) for pid in services}
        self.executors: dict[int, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.is_set():
            tree = _children()
            todo = [child for worker in self.workers for child in tree.get(worker, [])]
            while todo:
                pid = todo.pop()
                self.executors[pid] = max(self.executors.get(pid, 0), _cpu_ticks(pid))
                todo.extend(tree.get(pid, []))
            self.done.wait(0.5)

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        ticks = sum(self.executors.values()) + sum(max(0, _cpu_ticks(pid) - t) for pid, t in self.start.items())
        return round(ticks / os.sysconf("SC_CLK_TCK"), 1)


# -- what a step ran on, and the times lakecompact gives -----------------------------------------------------
@functools.cache
def spark_version(python: str | Path) -> str | None:
    """The pyspark version that `python` imports (the Spark its lakecompact CLI or spark-submit runs on)."""
    found = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True,
                           text=True, check=False, timeout=120)
    return (found.stdout.strip() or None) if found.returncode == 0 else None


def core_seconds(info: dict) -> float | None:
    """The time lakecompact gives for the work itself, without its session's start and its own bookkeeping: the sum
    of its `land: batch …, in N s` or `compact <table>: …, in N s` lines (from the step's log and output)."""
    log_path = ROOT / info["log"] if info.get("log") else None
    if not log_path or not log_path.exists():
        return None
    said = log_path.read_text(errors="replace") + (
        log_path.with_suffix(".out").read_text(errors="replace") if log_path.with_suffix(".out").exists() else "")
    found = re.findall(r"^(?:land: batch \d+|compact \w+): .*, in ([0-9.]+)s$", said, re.MULTILINE)
    return round(sum(float(x) for x in found), 1) if found else None
