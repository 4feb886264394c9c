"""docs/performance.md is what benchmarks/report.py makes of the committed benchmarks/results: a results file changed
without the page (or the page edited by hand) fails here. `python benchmarks/run.py report` writes it again."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "performance.md"


def _report():
    spec = importlib.util.spec_from_file_location("benchmarks_report", ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_what_the_committed_results_make():
    assert PAGE.read_text() == _report().render(), (
        "docs/performance.md does not match benchmarks/results/: run `python benchmarks/run.py report`")


def test_every_target_has_its_latest_ratio_and_a_chart():
    report = _report()
    for target, name, measure in report.rows():
        assert measure is not None and name is not None, f"no results measure the target: {target.what}"
        assert (report.RESULTS / f"{name}.png").exists() and (report.RESULTS / f"{name}.md").exists(), name
    table = PAGE.read_text().split("## Targets", 1)[1].split("\n\n", 2)[2].split("\n\n", 1)[0].splitlines()[2:]
    assert len(table) == len(report.TARGETS)
    for row in table:
        latest = row.split(" | ")[2]
        assert re.match(r"\*\*[0-9.]+(×| GB)?\*\* \(", latest), row


def test_links_are_relative_paths_that_exist_and_no_commit_is_named():
    text = PAGE.read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert any(link.endswith(".png") for link in links)
    for link in links:
        assert not re.match(r"[a-z]+:", link) and not link.startswith("/"), link
        assert (PAGE.parent / link).resolve().exists(), link
    assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", text)
