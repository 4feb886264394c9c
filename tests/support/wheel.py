"""The package as a user gets it: the wheel of the working tree (`build_wheel`), installed in a venv outside the
checkout (`install_in_venv`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(out: Path) -> Path:
    """`pip wheel` of the working tree (the files git tracks or would, changes included), built from a copy: a
    build in the checkout leaves build/ behind, whose stale files a later wheel would take in. With the setuptools
    installed (no build isolation): nothing is downloaded."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode()
    source = out / "source"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # not one deleted from the tree but not yet from git
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(out), str(source)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = out.glob("lakecompact-*.whl")
    return wheel


def install_in_venv(wheel: Path, venv: Path) -> Path:
    """A venv that sees this Python's packages (pyspark and the other dependencies, not fetched again) with the
    wheel installed in it, over the checkout's editable install; its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--force-reinstall", "--quiet",
                                str(wheel)], capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python
