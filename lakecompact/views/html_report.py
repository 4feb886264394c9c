"""`lakecompact report --out report.html`: one self-contained page about the lake (no network needed to open
it: the charts are SVG inside the page). Per table: the current state, compaction time and rows per base
version, pending events and source lag over time, and the quarantine's reasons.

The history comes from files the writers keep (manifests, and the counts file of every increment batch,
pending or archived): a batch adds its events to the backlog when it landed and takes them away when the
version that consumed it was written. Only the quarantine's reasons need Spark (they are read from its
parquet), and only when something is quarantined.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import matplotlib
from matplotlib import pyplot
from matplotlib.ticker import MaxNLocator
from pyspark.sql import SparkSession

from lakecompact.config import Config
from lakecompact.errors import LakecompactError
from lakecompact.lake.catalog import UNPLACED, Catalog
from lakecompact.lake.manifest import Manifests
from lakecompact.report import say
from lakecompact.views.history import history
from lakecompact.views.status import batch_folders, folder_counts, status, table_of

# one colour per chart, so that a reader (and the test's screenshot check) can tell them apart
COLOURS = {"seconds": "#1f77b4", "rows": "#2ca02c", "backlog": "#ff7f0e", "lag": "#d62728", "quarantine": "#9467bd"}
LAG_UNITS = (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0), ("seconds", 1.0))  # largest first
REASON_CHARS = 70  # of a reason, on the chart's axis (the table below it has the whole text)


def _time(iso: str | None) -> datetime | None:
    return None if iso is None else datetime.fromisoformat(iso)


def timeline(files: SparkSession | None, config: Config, table: str) -> dict[str, list]:
    """{backlog: [(time, pending events)], land_lag: [(time, seconds)], compaction_lag: [(time, seconds)]}."""
    catalog = Catalog(files, config)
    paths = catalog.paths(table)
    consumed_at: dict[tuple[str, int], datetime] = {}
    compaction_lag = []
    for manifest, fate, _ in Manifests(catalog.storage, paths.manifests).history():
        written = _time(manifest.stats.get("created_at"))
        if fate == "rolled back" or written is None:
            continue
        for batch in manifest.consumed:
            consumed_at[batch] = min(consumed_at.get(batch, written), written)
        seen = manifest.stats.get("max_source_ts_ms")
        if seen is not None:
            compaction_lag.append((written, max(0.0, written.timestamp() - seen / 1000)))
    steps, land_lag = [], []
    for batch, folder in batch_folders(catalog, paths.increments):
        counts = folder_counts(catalog, folder)
        landed = _time((counts or {}).get("landed_at"))
        if landed is None:  # a folder whose land was interrupted before it wrote the counts
            continue
        steps.append((landed, counts["rows"]))
        if batch in consumed_at:
            steps.append((consumed_at[batch], -counts["rows"]))
        if counts.get("max_source_ts_ms") is not None:
            land_lag.append((landed, max(0.0, landed.timestamp() - counts["max_source_ts_ms"] / 1000)))
    backlog, pending = [], 0
    for when, change in sorted(steps):
        pending += change
        backlog.append((when, pending))
    return {"backlog": backlog, "land_lag": sorted(land_lag), "compaction_lag": sorted(compaction_lag)}


# -- the charts ------------------------------------------------------------------------------------


def _figure(title: str):
    matplotlib.use("Agg")  # no display: files only
    figure, axes = pyplot.subplots(figsize=(5.6, 2.8), dpi=100)
    axes.set_title(title, fontsize=10, loc="left")
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    return figure, axes


def _image(figure, alt: str) -> str:
    """The figure as an <img> holding its SVG (a data: URI: nothing to fetch, and ids of two SVGs never clash)."""
    figure.tight_layout()
    svg = io.BytesIO()
    figure.savefig(svg, format="svg")
    pyplot.close(figure)
    data = base64.b64encode(svg.getvalue()).decode("ascii")
    return f'<img class="chart" alt="{html.escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _empty(axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="#777", fontsize=9)
    axes.set_xticks([])
    axes.set_yticks([])


def _version_charts(versions: list[dict]) -> list[str]:
    done = [v for v in versions if v["state"] != "rolled back"]
    figure, axes = _figure("Compaction time per base version (s)")
    timed = [(v["version"], v["seconds"]) for v in done if v["seconds"] is not None]
    if timed:
        axes.bar([f"v{n}" for n, _ in timed], [s for _, s in timed], color=COLOURS["seconds"])
    else:
        _empty(axes, "no compaction yet")
    charts = [_image(figure, "compaction time per version")]
    figure, axes = _figure("Rows per base version")
    counted = [v for v in done if v["rows"] is not None]
    if counted:
        labels = [f"v{v['version']}" for v in counted]
        axes.bar(labels, [v["rows_written"] or 0 for v in counted], color=COLOURS["rows"], alpha=0.35,
                 label="rows written")
        axes.plot(labels, [v["rows"] for v in counted], color=COLOURS["rows"], marker="o", label="rows")
        axes.plot(labels, [v["live_rows"] for v in counted], color=COLOURS["rows"], marker="s", linestyle="--",
                  label="live rows")
        axes.legend(fontsize=7)
    else:
        _empty(axes, "no compaction yet")
    charts.append(_image(figure, "rows per version"))
    return charts


def _time_charts(series: dict[str, list]) -> list[str]:
    figure, axes = _figure("Pending events (landed, not yet compacted)")
    if series["backlog"]:
        axes.step([t for t, _ in series["backlog"]], [n for _, n in series["backlog"]], where="post",
                  color=COLOURS["backlog"], linewidth=2)
        axes.fill_between([t for t, _ in series["backlog"]], [n for _, n in series["backlog"]], step="post",
                          color=COLOURS["backlog"], alpha=0.25)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        figure.autofmt_xdate()
    else:
        _empty(axes, "nothing landed yet")
    charts = [_image(figure, "pending events over time")]
    lags = [s for _, s in series["land_lag"] + series["compaction_lag"]]
    unit, size = next((u for u in LAG_UNITS if max(lags, default=0) >= 2 * u[1]), LAG_UNITS[-1])
    figure, axes = _figure(f"Source lag ({unit}) at landing and at compaction")
    if lags:
        for points, marker, style, label in ((series["land_lag"], "o", "-", "when landed"),
                                             (series["compaction_lag"], "s", "--", "when compacted")):
            if points:
                axes.plot([t for t, _ in points], [s / size for _, s in points], color=COLOURS["lag"],
                          marker=marker, linestyle=style, label=label)
        axes.ticklabel_format(axis="y", style="plain", useOffset=False)
        axes.legend(fontsize=7)
        figure.autofmt_xdate()
    else:
        _empty(axes, "nothing landed yet")
    charts.append(_image(figure, "source lag over time"))
    return charts


def _quarantine_chart(reasons: list[dict]) -> str:
    figure, axes = _figure("Quarantined events by reason")
    if reasons:
        labels = [_short(r["reason"]) for r in reasons][::-1]
        axes.barh(labels, [r["events"] for r in reasons][::-1], color=COLOURS["quarantine"])
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.tick_params(axis="y", labelsize=7)
    else:
        _empty(axes, "nothing quarantined")
    return _image(figure, "quarantined events by reason")


def _short(reason: str) -> str:
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"


# -- the page --------------------------------------------------------------------------------------

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; } .chart { width: 560px; height: 280px; }
.muted { color: #777; font-size: 12px; }
"""
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")  # as the writers record them, UTC
STATE_COLUMNS = (
    ("table", "table"), ("base_version", "base version"), ("base_rows", "rows"), ("live_rows", "live"),
    ("pending_batches", "pending batches"), ("pending_events", "pending events"), ("quarantined", "quarantined"),
    ("last_compaction", "last compaction"), ("last_compaction_seconds", "took (s)"),
    ("last_source_ts", "last source change"),
)


def _cell(value: Any) -> str:
    if isinstance(value, str) and TIMESTAMP.match(value):
        value = f"{value[:10]} {value[11:19]} UTC"
    if value is None:
        return '<td class="n">?</td>'
    if isinstance(value, (int, float)):
        return f'<td class="n">{value}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(config: Config, states: list[dict], tables: dict[str, dict[str, Any]], generated: datetime) -> str:
    """The page: the state of every table, then one section per table (its charts and quarantine reasons)."""
    sections = []
    for name, data in tables.items():
        reasons = data["reasons"]
        reason_rows = [[r["reason"], r["events"], ", ".join(str(b) for b in r["batches"])] for r in reasons]
        sections.append(
            f'<h2 id="{html.escape(name)}">'
            + html.escape(f"{UNPLACED}: events of no table" if name == UNPLACED else f"{config.database}.{name}")
            + "</h2>"
            f'<div class="charts">{"".join(data["charts"])}</div>'
            + (_table(["quarantine reason", "events", "batches"], reason_rows) if reasons else "")
        )
    # a name with no table (or the events of no table, UNPLACED) has its quarantine only: "-" where a table has more
    state_rows = [[row.get(key, "-") for key, _ in STATE_COLUMNS] for row in states]
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>lakecompact: {html.escape(config.database)}</title><style>{STYLE}</style></head><body>"
        f"<h1>lakecompact: database {html.escape(config.database)}</h1>"
        f'<p class="muted">warehouse {html.escape(config.warehouse)}; generated {generated.isoformat(timespec="seconds")}'
        "</p>"
        + _table([title for _, title in STATE_COLUMNS], state_rows)
        + "".join(sections)
        + "</body></html>"
    )


def write_report(
    files: SparkSession | None, spark: Callable[[], SparkSession], config: Config, out: str,
    tables: list[str] | None = None,
) -> None:
    """Write the page to `out`. `files`: None to read a local warehouse from the disk; `spark()` is called only
    when some table has quarantined events (their reasons are read from parquet)."""
    states = status(files, config)
    # as `status`: the tables, then the quarantine of names with no table yet and of the events of no table
    known = [table_of(row) for row in states]
    tabled = {table_of(row) for row in states if "base_version" in row}
    for name in tables or ():
        if name not in known:
            raise LakecompactError(f"report: unknown table {name!r}; known tables: {', '.join(known) or 'none'}")
    chosen = tables or known
    quarantined = any(row.get("quarantined") for row in states if table_of(row) in chosen)
    all_reasons = _reasons(spark(), config) if quarantined else []
    pages = {}
    for name in chosen:
        reasons = [r for r in all_reasons if r["table"] == name]
        charts = [*_version_charts(history(files, config, name)), *_time_charts(timeline(files, config, name))] \
            if name in tabled else []  # no table: its quarantine only
        pages[name] = {"charts": [*charts, _quarantine_chart(reasons)], "reasons": reasons}
    page = render(config, [r for r in states if table_of(r) in chosen], pages, datetime.now(UTC))
    with open(out, "w", encoding="utf-8") as target:
        target.write(page)
    tables = [name for name in pages if name in tabled]
    others = "" if len(tables) == len(pages) else " and the quarantine of events of no table"
    say(f"report: {len(tables)} table(s){others}, {len(page) // 1024} KiB, written to {out}")


def _reasons(spark: SparkSession, config: Config) -> list[dict]:
    from lakecompact.views.quarantine import quarantine

    return quarantine(spark, config, None, show=0)
