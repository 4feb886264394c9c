"""`lakecompact report`: the page's numbers come from the lake's own records, it needs no network, and a real
headless Chromium (Debian's package, installed by scripts/stack/install.sh) renders every chart."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy
import pytest
from matplotlib import image

from lakecompact.views.html_report import COLOURS, timeline, write_report
from lakecompact.views.status import status
from tests.support.debezium import INT, TEXT, Topic

TABLE = "public_items"


def rendered(page: str, out: str) -> numpy.ndarray:
    """A screenshot of the page in headless Chromium, as RGB values in [0, 1]."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        message = "no chromium on PATH: scripts/stack/install.sh installs Debian's package"
        if os.environ.get("LAKECOMPACT_E2E_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1700",
         f"--screenshot={out}", f"file://{page}"],
        check=True, capture_output=True, timeout=120,
    )
    return image.imread(out)[:, :, :3]


def pixels_of(screenshot: numpy.ndarray, colour: str) -> int:
    rgb = numpy.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((numpy.abs(screenshot - rgb).max(axis=2) < 0.02).sum())


def test_the_report_charts_what_the_lake_recorded_and_renders_in_a_browser(lake, tmp_path):
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT), ("qty", INT)], ["id"])
    lake.write([pg.event("c", {"id": i, "name": f"n{i}", "qty": i}, 100 + i) for i in range(1, 7)]
               + [pg.event("x", {"id": 9, "name": "unknown op", "qty": 9}, 120)])
    lake.land()
    lake.compact()
    lake.write([pg.event("u", {"id": i, "name": f"m{i}", "qty": i}, 200 + i) for i in range(1, 4)]
               + [pg.event("d", {"id": 6, "name": "", "qty": 0}, 210)])
    lake.land()
    lake.compact()
    lake.write([pg.event("u", {"id": 5, "name": "late", "qty": 5}, 300),
                pg.event("c", {"id": 7, "name": "n7", "qty": "seven"}, 301)])  # a string for an int32: quarantined
    lake.land()  # pending: not compacted

    # the backlog over time: +6 (batch 1), -6 (v1), +4, -4 (v2), +1 pending now
    series = timeline(None, lake.config, TABLE)
    assert [n for _, n in series["backlog"]] == [6, 0, 4, 0, 1]
    [row] = [r for r in status(None, lake.config) if r["table"].endswith(TABLE)]
    assert series["backlog"][-1][1] == row["pending_events"] == 1
    assert len(series["land_lag"]) == 3 and len(series["compaction_lag"]) == 2
    assert all(lag > 0 for _, lag in series["land_lag"] + series["compaction_lag"])

    page = tmp_path / "report.html"
    write_report(None, lambda: lake.spark, lake.config, str(page))
    text = page.read_text()
    # self-contained: nothing to fetch (the charts are data: URIs), no script
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text, re.IGNORECASE)
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert text.count('<img class="chart"') == 5
    assert f"{lake.database}.{TABLE}" in text
    assert text.count("<tr>") == 1 + 1 + 1 + 2  # state: header + 1 table; quarantine reasons: header + 2
    assert "unknown op &#x27;x&#x27;" in text and "payload does not match its schema" in text

    screenshot = rendered(str(page), str(tmp_path / "report.png"))
    for chart, colour in COLOURS.items():
        assert pixels_of(screenshot, colour) > 200, f"the {chart} chart did not render ({colour})"
