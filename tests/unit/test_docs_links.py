"""The user's documentation holds together: every relative link in README.md and docs/*.md reaches a file of the
repository (and, for `#anchor` links into Markdown, a heading that exists, by GitHub's slug rules), and the README
stays short and starts with the two commands a newcomer runs. No Spark, no lake: a quick unit test."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250
README_COMMANDS = ("./scripts/demo.sh", "./scripts/test.sh")
# Written by others alongside this test: docs/design.md by the maintainer who writes the design, and
# docs/performance.md by the benchmark runner (benchmarks/report.py). A link to either counts as good while the file
# is not there yet; once it is, its links and anchors are checked like any other.
WRITTEN_ELSEWHERE = {ROOT / "docs" / "design.md", ROOT / "docs" / "performance.md"}

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the target may be <bracketed>
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened[1][0] * 3
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            lines.append((number, line))
    return lines


def _plain(markdown: str) -> str:
    """A heading's text as GitHub renders it: code spans kept literally, links and images as their text,
    emphasis markers gone."""
    parts = []
    position = 0
    for span in _CODE_SPAN.finditer(markdown):
        parts.append(_strip_inline(markdown[position:span.start()]))
        parts.append(span[2].strip())
        position = span.end()
    parts.append(_strip_inline(markdown[position:]))
    return "".join(parts)


def _strip_inline(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w))", "", text)
    return text


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (github-slugger): its text lower-cased, every character that is not a letter,
    digit, `_`, `-` or space dropped, each space a `-`."""
    text = _plain(heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        heading = _ATX_HEADING.match(line)
        if not heading:
            continue
        base = slug(heading[2])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a Markdown file, outside code blocks and code spans."""
    found = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        prose = _CODE_SPAN.sub("", line)
        targets = [m[1] for m in _INLINE_LINK.finditer(prose)]
        definition = _REFERENCE_DEFINITION.match(prose)
        if definition:
            targets.append(definition[1])
        found.extend((number, target.strip("<>")) for target in targets)
    return found


def broken_links(path: Path, root: Path = ROOT, written_elsewhere: set[Path] = WRITTEN_ELSEWHERE) -> list[str]:
    """`file:line: target (why)` for each relative link of `path` that leads nowhere."""
    broken = []
    where = path.relative_to(root)
    for number, target in links(path):
        if not target or _SCHEME.match(target) or target.startswith("//"):
            continue  # an absolute URL: not this repository's to check
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.is_relative_to(root.resolve()):
            broken.append(f"{where}:{number}: {target} (outside the repository)")
            continue
        if not destination.exists():
            if destination not in written_elsewhere:
                broken.append(f"{where}:{number}: {target} (no such file)")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{where}:{number}: {target} (no heading with anchor #{anchor} in "
                          f"{destination.relative_to(root.resolve())})")
    return broken


def documentation() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# -- the repository's documentation ------------------------------------------------------------------------------


def test_every_relative_link_of_the_documentation_reaches_a_file_and_heading_that_exist():
    pages = documentation()
    assert len(pages) >= 8, f"expected README.md and the pages of docs/, found {pages}"
    checked = sum(len(links(page)) for page in pages)
    assert checked >= 30, f"expected the pages to link to each other, found {checked} links"
    broken = [problem for page in pages for problem in broken_links(page)]
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; expected at most {README_MAX_LINES}"
    content = [line for line in lines if line.strip()]
    assert content[0].startswith("# "), f"expected the title first, got {content[0]!r}"
    assert not content[1].startswith(("#", "```")), f"expected a one-line summary second, got {content[1]!r}"
    assert content[2].startswith("```"), f"expected the commands' code block after the summary, got {content[2]!r}"
    commands = [line.split("#")[0].strip() for line in content[3:3 + len(README_COMMANDS)]]
    assert commands == list(README_COMMANDS), f"expected {README_COMMANDS} right after the summary, got {commands}"


def test_the_readme_gives_the_test_command_that_ci_runs():
    """.ci/run runs the README's test command word for word on a fresh clone."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    test_line = next(line.strip() for line in readme if line.startswith(README_COMMANDS[1]))
    assert test_line in ci, f"expected .ci/run to run the README's line {test_line!r}; it has {ci}"


# -- the checker itself ------------------------------------------------------------------------------------------


def test_slugs_follow_githubs_rules():
    assert slug("Every key") == "every-key"
    assert slug("`[naming]`: topic → table") == "naming-topic--table"
    assert slug("`[defaults]` and `[tables.<t>]`: per-table settings") == "defaults-and-tablest-per-table-settings"
    assert slug("Status, history and rollback") == "status-history-and-rollback"
    assert slug("The `__bucket` column") == "the-__bucket-column"
    assert slug("A [linked](other.md) *heading*") == "a-linked-heading"


def test_the_checker_finds_missing_files_missing_headings_and_links_out_of_the_repository(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n\n## A section\n\n## A section\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n"
        "[good](docs/there.md) [good anchor](docs/there.md#a-section) [repeated](docs/there.md#a-section-1)\n"
        "[web](https://example.com/nowhere.md) [here](#title) ![image](docs/there.md)\n"
        "[gone](docs/gone.md) [no heading](docs/there.md#nowhere) [no own heading](#nowhere)\n"
        "[outside](../elsewhere.md)\n"
        "`[in code](docs/gone.md)`\n"
        "```\n[in a block](docs/gone.md)\n```\n"
        "[later]: docs/missing.md\n"
        "[pending](docs/pending.md#any)\n",
        encoding="utf-8",
    )
    broken = broken_links(page, root=tmp_path, written_elsewhere={(tmp_path / "docs" / "pending.md").resolve()})
    assert [problem.split(" (")[0] for problem in broken] == [
        "README.md:5: docs/gone.md",
        "README.md:5: docs/there.md#nowhere",
        "README.md:5: #nowhere",
        "README.md:6: ../elsewhere.md",
        "README.md:11: docs/missing.md",
    ], broken
