"""Row history without Spark: the `row_history` settings as loaded, and `sql --as-of`'s rewrite of a query
(docs/design.md "Row history")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlglot
from sqlglot import exp

from lakecompact import config as config_module
from lakecompact.errors import ConfigError, QueryError
from lakecompact.views.as_of import AsOfError, NoRowHistory, as_of_query, moment_of

T = datetime(2026, 6, 30, 23, 59, 59, tzinfo=UTC)
AS_OF = "`lake`.`{t}_history` WHERE __valid_from <= CAST('2026-06-30 23:59:59' AS TIMESTAMP) AND (__valid_to IS NULL " \
        "OR CAST('2026-06-30 23:59:59' AS TIMESTAMP) < __valid_to)"


def _config(defaults: dict | None = None, tables: dict | None = None) -> config_module.Config:
    return config_module.from_dict({"warehouse": "/lake", "source": {"paths": ["/e/*.jsonl"]},
                                    "defaults": defaults or {}, "tables": tables or {}})


def test_row_history_is_off_by_default_and_keeps_every_version():
    settings = _config().table("orders")
    assert settings.row_history is False and settings.row_history_days == 0


def test_row_history_set_in_defaults_reaches_every_table_and_a_table_sets_its_own_retention():
    config = _config({"row_history": True}, {"orders": {"row_history_days": 90}})
    assert config.table("orders").row_history and config.table("orders").row_history_days == 90
    assert config.table("other").row_history and config.table("other").row_history_days == 0


@pytest.mark.parametrize(("tables", "message"), [
    ({"events": {"key": [], "row_history": True}}, "tables.events.row_history: expected false for a table without a key"),
    ({"orders": {"row_history_days": -1}}, "tables.orders.row_history_days: expected a number of days >= 0"),
    ({"orders": {"row_history": "yes"}}, "tables.orders.row_history: expected true or false"),
    ({"orders": {"history": True}}, "did you mean 'row_history'?"),
])
def test_a_wrong_row_history_setting_is_one_line_naming_it(tables, message):
    with pytest.raises(ConfigError) as error:
        _config(tables=tables)
    assert message in str(error.value) and "\n" not in str(error.value)


def _collapse(sql: str) -> str:
    return " ".join(sql.split())


def test_each_history_table_of_a_query_is_read_as_of_the_moment_under_its_own_name():
    query = "SELECT o.id, c.name FROM orders AS o JOIN lake.customers c ON o.customer = c.id WHERE o.qty > 1"
    rewritten = _collapse(as_of_query(query, T, "lake", {"orders", "customers"}))
    assert f"FROM (SELECT * FROM {AS_OF.format(t='orders')}) AS o" in rewritten
    assert f"JOIN (SELECT * FROM {AS_OF.format(t='customers')}) AS c ON o.customer = c.id" in rewritten
    assert rewritten.endswith("WHERE o.qty > 1")
    assert sqlglot.parse_one(rewritten, read="spark") is not None


def test_an_unaliased_table_keeps_its_name_and_a_cte_of_that_name_is_left_alone():
    rewritten = _collapse(as_of_query(
        "WITH recent AS (SELECT * FROM orders WHERE qty > 1) SELECT orders.id FROM orders, recent", T, "lake", {"orders"}))
    tree = sqlglot.parse_one(rewritten, read="spark")
    assert sorted(t.name for t in tree.find_all(exp.Table)) == ["orders_history", "orders_history", "recent"]
    assert f"(SELECT * FROM {AS_OF.format(t='orders')}) AS orders" in rewritten


def test_a_string_that_names_a_table_is_not_rewritten():
    rewritten = as_of_query("SELECT 'orders' AS name, id FROM orders WHERE note = 'FROM orders'", T, "lake", {"orders"})
    assert "'orders' AS name" in rewritten and "note = 'FROM orders'" in rewritten


@pytest.mark.parametrize("query", ["SELECT * FROM audit", "SELECT * FROM lake.orders JOIN other.orders USING (id)",
                                   "SELECT * FROM orders_changes"])
def test_a_table_without_row_history_in_an_as_of_query_is_one_line(query):
    with pytest.raises(NoRowHistory) as error:
        as_of_query(query, T, "lake", {"orders"})
    message = str(error.value)
    assert message.startswith("sql --as-of: ") and "row_history = true" in message and "\n" not in message
    assert error.value.exit_code == QueryError.exit_code


def test_the_moment_is_utc():
    assert moment_of("2026-06-30 23:59:59") == T
    assert moment_of("2026-07-01T01:59:59+02:00") == T
    with pytest.raises(AsOfError, match="expected a moment such as"):
        moment_of("end of June")
