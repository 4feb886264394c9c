"""The package's shape: what loading the config costs, no import circles, and SQL only from templates."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lakecompact"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, modules: set[str]) -> set[str]:
    """The lakecompact modules a module imports: at import time, inside functions and for type checking (a circle
    of annotations is a circle of the design all the same)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lakecompact"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("lakecompact"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        edges = _imports(ast.parse(path.read_text()), set(paths))
        # a module's package is imported first
        edges |= {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = {e for e in edges if e in paths and e != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circle():
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


STAGES = ("landing", "compaction", "views", "verify", "schema", "service")
ENTRY_POINTS = {"lakecompact.cli", "lakecompact.demo", "lakecompact.__main__"}
LAYERS = ("the base", "the lake's state", "a stage", "an entry point")  # docs/design.md "Layers", lowest first


def _layer(module: str) -> int:
    if module in ENTRY_POINTS:
        return 3
    package = module.split(".")[1] if "." in module else None  # a package's own __init__ is in its layer too
    return 2 if package in STAGES else 1 if package == "lake" else 0


def test_each_layer_imports_only_from_those_below_it():
    graph = _graph()
    upward = sorted(f"{m} ({LAYERS[_layer(m)]}) -> {e} ({LAYERS[_layer(e)]})"
                    for m, edges in graph.items() for e in edges if _layer(e) > _layer(m))
    assert not upward, "imports from a higher layer (docs/design.md \"Layers\"): " + ", ".join(upward)
    assert len(graph) > 60 and {_layer(m) for m in graph} == {0, 1, 2, 3}


def test_the_lake_state_layer_holds_the_paths_the_manifests_the_catalog_and_the_view_ddl():
    lake = {m for m in _graph() if _layer(m) == 1}
    assert {f"lakecompact.lake.{name}" for name in ("paths", "storage", "manifest", "catalog", "model",
                                                    "view_definition", "row_history")} <= lake


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_loading_the_config_imports_no_process_network_or_spark_modules():
    probe = (
        "import sys; before = set(sys.modules); import lakecompact.config; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split())
    assert "lakecompact.config" in loaded
    heavy = {"subprocess", "threading", "requests", "pyspark", "sqlglot", "jinja2", "avro", "socket"}
    assert not loaded & heavy, sorted(loaded & heavy)


# -- SQL is built by templates and the quoting helper only ---------------------------------------------

QUOTING_HELPER = PACKAGE / "identifiers.py"
STATEMENT = re.compile(r"^\s*(SELECT|INSERT|CREATE|ALTER|DROP|SHOW|USE|UPDATE|MERGE|DELETE FROM|TRUNCATE|WITH)\b")
# `name` in SQL (`db`.`t`, `c`:INT, `c` INT, `c`, ...), or a backquote that opens or closes an f-string's value
# (f"`{name}`"); words quoted in a message (an `after` field) are no identifiers
IDENTIFIER = re.compile(r"\.`\w+`|`\w+`(\s*[.:,)]|\s+[A-Z])")


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }


def _quoted_names(tree: ast.AST):
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            pieces = node.values
            for i, piece in enumerate(pieces):
                if not (isinstance(piece, ast.Constant) and isinstance(piece.value, str)):
                    continue
                opens = piece.value.endswith("`") and i + 1 < len(pieces) and isinstance(pieces[i + 1], ast.FormattedValue)
                closes = piece.value.startswith("`") and i > 0 and isinstance(pieces[i - 1], ast.FormattedValue)
                if opens or closes:
                    yield piece.lineno, piece.value
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and IDENTIFIER.search(node.value)):
            yield node.lineno, node.value


def _string_parts(tree: ast.AST):
    """Every string constant and f-string piece, except docstrings."""
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def _sql_in_python() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(PACKAGE.parent)
        if path != QUOTING_HELPER:
            found += [f"{where}:{line}: backquoted identifier {text!r}" for line, text in _quoted_names(tree)]
        for line, text in _string_parts(tree):
            if STATEMENT.search(text):
                found.append(f"{where}:{line}: SQL statement text {text!r}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sql"
                    and node.args and isinstance(node.args[0], (ast.JoinedStr, ast.BinOp))):
                found.append(f"{where}:{node.lineno}: spark.sql() of text built in Python")
    return found


def test_sql_text_and_quoted_identifiers_come_only_from_templates_and_the_quoting_helper():
    assert _sql_in_python() == []


@pytest.mark.parametrize("source", ['x = f"`{name}`"', 'spark.sql(f"SELECT {c} FROM t")', 'q = "DROP TABLE t"'])
def test_the_sql_check_finds_sql_built_in_python(tmp_path, monkeypatch, source):
    package = tmp_path / "lakecompact"
    package.mkdir()
    (package / "module.py").write_text(source + "\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert _sql_in_python()
