"""Every reference to the design document in code, tests, scripts, benchmarks and SQL templates names a section
of docs/design.md that exists, as `docs/design.md "Section name"`; no bare reference to the old design file
(its name in capitals) is left."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "design.md"
SEARCHED = ("lakecompact", "tests", "scripts", "benchmarks", "sql_templates")
SUFFIXES = {".py", ".j2", ".sh"}
# `docs/design.md "Section"`; a section name may wrap onto the next line of a docstring or a `#` comment
REFERENCE = re.compile(r'docs/design\.md\s+"([^"]+)"')
# the design document as code used to cite it before it lived in docs/design.md (spelled in two parts, so that a
# grep for it finds no false hit here)
OLD_NAME = "DES" + "IGN"
BARE = re.compile(rf"\b{OLD_NAME}\b")


def _sources() -> list[Path]:
    """The searched files, but this one (its own examples are no references)."""
    skipped = {"__pycache__", "results", ".stack", "tmp"}
    found = []
    for folder in SEARCHED:
        for path in sorted((ROOT / folder).rglob("*")):
            if (path.is_file() and path.suffix in SUFFIXES and path != Path(__file__).resolve()
                    and not skipped & set(path.relative_to(ROOT).parts)):
                found.append(path)
    return found


def _section_name(text: str) -> str:
    """A cited name with its line breaks (and a comment's `#` after one) as single spaces."""
    return " ".join(re.sub(r"\n\s*#?", " ", text).split())


def heading_list(markdown: str) -> list[str]:
    """The headings of a markdown text (any level), in order, outside fenced code blocks."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)):
            found.append(match[1])
    return found


def headings(markdown: str) -> set[str]:
    return set(heading_list(markdown))


def references() -> list[tuple[str, str]]:
    """(where, cited section) of every `docs/design.md "…"` reference in the searched files."""
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in REFERENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{path.relative_to(ROOT)}:{line}", _section_name(match[1])))
    return found


def test_the_design_document_has_the_sections_outside_checks_rely_on():
    listed = heading_list(DOC.read_text(encoding="utf-8"))
    assert len(listed) == len(set(listed)), f"a section name is cited alone, so each must be unique: {listed}"
    sections = set(listed)
    assert "Contract" in sections
    assert {"The flow", "Storage layout", "Semantics", "Commit protocols"} <= sections


def test_every_design_reference_names_a_section_that_exists():
    cited = references()
    assert len(cited) >= 20, f"expected the code and tests to cite docs/design.md, found {cited}"
    assert len(_sources()) > 50  # the search reached the code, not an empty folder
    sections = headings(DOC.read_text(encoding="utf-8"))
    missing = [f'{where}: "{name}"' for where, name in cited if name not in sections]
    assert not missing, f"references to sections docs/design.md does not have: {missing}; it has {sorted(sections)}"


def test_no_bare_design_reference_is_left():
    bare = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if BARE.search(line):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not bare, f'expected docs/design.md "Section name" instead of {OLD_NAME}: {bare}'


def test_the_checks_find_what_they_look_for():
    """The patterns themselves: a reference wrapped over two comment lines, a missing section, a bare old name."""
    text = '# the archive (docs/design.md "Commit\n# protocols"), and (docs/design.md "Nowhere")'
    assert [_section_name(m[1]) for m in REFERENCE.finditer(text)] == ["Commit protocols", "Nowhere"]
    assert headings("# Top\n## Commit protocols\n```\n## not a heading\n```\n### Contract\n") == {
        "Top", "Commit protocols", "Contract"}
    assert BARE.search(f"(see {OLD_NAME})") and not BARE.search("docs/design.md")
