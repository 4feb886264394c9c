"""SQL from the Jinja templates in sql_templates/, each statement parse-checked with sqlglot before it runs."""

from __future__ import annotations

import functools
import logging

import jinja2
import sqlglot
from pyspark.sql import DataFrame, SparkSession

from lakecompact import data_folder
from lakecompact.errors import LakecompactError
from lakecompact.identifiers import check_identifier, quote


def _sql_string(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _source_string(value: str, kind: str) -> str:
    """A string literal of the source database. Only a backslash reads differently by the server's settings: in
    PostgreSQL it is written in an escape string (E'…'), whatever standard_conforming_strings says; MySQL and
    MariaDB escape it (wrong under NO_BACKSLASH_ESCAPES, which docs/verify.md names)."""
    text = str(value)
    if "\\" not in text:
        return "'" + text.replace("'", "''") + "'"
    escaped = "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
    return "E" + escaped if kind == "postgresql" else escaped


def _sql_literal(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return _sql_string(str(value))
    return str(value)


# to_json's options for a text that tells apart every two values that differ: timestamps to the microsecond (the
# default text stops at milliseconds); the templates' exact_json (clauses/images.sql.j2) and `sql`'s printed rows
EXACT_JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(data_folder("sql_templates", "sql_templates")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["q"] = quote
    env.filters["ident"] = check_identifier
    env.filters["s"] = _sql_string
    env.filters["source_s"] = _source_string
    env.filters["lit"] = _sql_literal
    env.globals["exact_json_options"] = EXACT_JSON_OPTIONS
    return env


def template_names() -> list[str]:
    return sorted(n for n in environment().list_templates() if n.endswith(".sql.j2") and "/" not in n)


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context).strip()


class InvalidSql(LakecompactError):
    def __init__(self, template: str, sql: str, error: Exception):
        super().__init__(f"template {template} rendered SQL that does not parse ({error}):\n{sql}")


logging.getLogger("sqlglot").setLevel(logging.ERROR)


def parse_check(sql: str, template: str = "<sql>", dialect: str = "spark") -> None:
    error = _parse_error(sql, dialect)
    if error is not None:
        raise InvalidSql(template, sql, error) from None


@functools.lru_cache(maxsize=512)
def _parse_error(sql: str, dialect: str) -> sqlglot.errors.ParseError | None:
    """Why `sql` does not parse, or None. Cached: a table's queries render the same text at every land,
    compaction and read, and parsing the semantic query takes tens of milliseconds each time."""
    try:
        sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError as exc:
        return exc
    return None


def render_checked(template: str, *, parse_as: str = "spark", **context) -> str:
    """Render one template and parse-check the SQL it gives (as Spark SQL, or `parse_as` another dialect)."""
    sql = render(template, **context)
    parse_check(sql, template, parse_as)
    return sql


def run(spark: SparkSession, template: str, **context) -> DataFrame:
    """Render, parse-check, and run one statement."""
    return spark.sql(render_checked(template, **context))


def query(spark: SparkSession, template: str, context: dict, **relations: DataFrame) -> DataFrame:
    """One query template, parse-checked, over DataFrames bound to its `{name}` relations."""
    return spark.sql(render_checked(template, **context), **relations)
