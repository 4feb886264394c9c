"""`lakecompact sql --as-of T`: a query rewritten with sqlglot so that every table it reads is read as of T from its
row history (docs/design.md "Row history")."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

import sqlglot
from sqlglot import exp

from lakecompact.errors import LakecompactError, QueryError
from lakecompact.naming import history_table


class AsOfError(LakecompactError):
    """An as-of query that cannot be read as of its moment: the moment, or a table without a row history."""

    exit_code = QueryError.exit_code


class NoRowHistory(AsOfError):
    """An as-of query that reads a table without a row history."""

    def __init__(self, tables: list[str]):
        self.tables = tables
        super().__init__(f"sql --as-of: {', '.join(tables)} keep(s) no row history (set row_history = true in "
                         "[tables.<t>], see docs/configuration.md): a query as of a moment reads only tables that do")


def moment_of(text: str) -> datetime:
    """The moment of `--as-of`, in UTC: an ISO 8601 date and time; without an offset it is UTC already."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise AsOfError(f"sql --as-of: expected a moment such as \"2026-06-30 23:59:59\" (UTC), got {text!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def as_of_condition(moment: datetime) -> exp.Expression:
    """`__valid_from <= T AND (__valid_to IS NULL OR T < __valid_to)`: the version live at T."""
    literal = exp.cast(exp.Literal.string(moment.replace(tzinfo=None).isoformat(sep=" ")), exp.DataType.build("TIMESTAMP"))
    valid_to = exp.column("__valid_to")
    return exp.and_(
        exp.LTE(this=exp.column("__valid_from"), expression=literal.copy()),
        exp.paren(exp.or_(exp.Is(this=valid_to, expression=exp.Null()), exp.LT(this=literal.copy(), expression=valid_to.copy()))),
    )


def as_of_query(query: str, moment: datetime, database: str, history: Collection[str]) -> str:
    """`query` (Spark SQL) with each table of `database` named in `history` read as of `moment` from its
    `<t>_history` (keeping the name or alias the query gives it); any other table it reads is refused."""
    try:
        tree = sqlglot.parse_one(query, read="spark")
    except sqlglot.errors.ParseError as error:
        raise QueryError(str(error)) from None
    local = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    refused = []
    for table in list(tree.find_all(exp.Table)):
        if not table.db and table.name.lower() in local:
            continue
        schema, name = (table.db or database).lower(), table.name.lower()
        if schema != database.lower() or name not in history:
            refused.append(f"{schema}.{name}")
            continue
        read = (exp.select("*").from_(exp.table_(history_table(name), db=database, quoted=True))
                .where(as_of_condition(moment)))
        table.replace(read.subquery(alias=table.alias_or_name))
    if refused:
        raise NoRowHistory(sorted(set(refused)))
    return tree.sql(dialect="spark")
