"""The bar chart of a scenario's summary: `python chart.py results/<scenario>.json results/<scenario>.png`
(matplotlib, from .bench/venv41)."""

from __future__ import annotations

import json
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main() -> None:
    with open(sys.argv[1]) as handle:
        doc = json.load(handle)
    rows = [r for r in doc["summary"] if r.get("seconds") is not None]
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["step"], []).append(row)
    height = max(3.0, 0.42 * len(rows) + 0.9 * len(groups) + 1.2)
    fig, axes = plt.subplots(len(groups) or 1, 1, figsize=(11, height), squeeze=False,
                             gridspec_kw={"height_ratios": [max(1, len(g)) for g in groups.values()] or [1]})
    for ax, (step, items) in zip(axes[:, 0], groups.items()):
        labels = ["\n".join(textwrap.wrap(r["engine"], 48)) for r in items]
        values = [r["seconds"] for r in items]
        colors = ["#d62728" if r["engine"].startswith("lakecompact") or r["run"].startswith("lakecompact")
                  else "#1f77b4" for r in items]
        bars = ax.barh(range(len(items)), values, color=colors)
        ax.set_yticks(range(len(items)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(step, fontsize=10, loc="left")
        ax.set_xlabel("seconds", fontsize=8)
        for bar, row in zip(bars, items):
            digits = 2 if row["seconds"] < 1 else 1
            text = f" {row['seconds']:.{digits}f}s" + (f"  ({row['ratio']:.2f}×)" if row.get("ratio") is not None else "")
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, text, va="center", fontsize=7)
        ax.set_xlim(0, max(values) * 1.3 if values else 1)
    m = doc["machine"]
    fig.suptitle(f"{doc['title']}\n{m['nproc']} cores, {m['memory_gib']} GiB, {m['cpu']}, {m['date']}"
                 + ("" if doc["correctness"]["all_agree"] else "  — MISMATCH/FAILURE, see .md"), fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
