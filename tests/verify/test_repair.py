"""repair's requests to the source (docs/design.md "Repair"): the incremental snapshot signal that names the
divergent keys, and the statement printed for a key the source no longer has."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import types as T

from lakecompact.config import VerifyConfig
from lakecompact.errors import LakecompactError
from lakecompact.verify.repair import (
    delete_statement,
    key_condition,
    require_signal_table,
    snapshot_signal,
    value_form,
)


def test_the_signal_asks_for_an_incremental_snapshot_of_the_named_keys_only():
    condition = key_condition("postgresql", ["id"], [["7"], ["1042"]])
    signal = json.loads(snapshot_signal("public.customers", condition))
    assert signal == {"data-collections": ["public.customers"], "type": "incremental",
                      "additional-conditions": [{"data-collection": "public.customers",
                                                 "filter": '"id" IN (\'7\', \'1042\')'}]}


def test_a_composite_key_is_named_as_rows_of_values():
    assert key_condition("mariadb", ["region", "id"], [["eu", "1"], ["us", "2"]]) == \
        "(`region`, `id`) IN (('eu', '1'), ('us', '2'))"


ROW = {"id": "4", "name": "O'Brien", "photo": "AAE=", "bio": None, "active": "1", "score": "-2.5E8", "ratio": "NaN"}
FORMS = {"id": "number", "name": "text", "photo": "binary", "bio": "text", "active": "boolean", "score": "number",
         "ratio": "number"}


def test_a_row_gone_from_the_source_gets_an_insert_and_delete_in_one_transaction_in_utc():
    statement = delete_statement("postgresql", "public.customers", ROW, FORMS,
                                 key_condition("postgresql", ["id"], [["4"]]))
    assert statement.splitlines() == [
        "SET TIME ZONE 'UTC';",
        "BEGIN;",
        ('INSERT INTO "public"."customers" ("id", "name", "photo", "bio", "active", "score", "ratio") VALUES '
        "(4, 'O''Brien', decode('AAE=', 'base64'), NULL, '1', -2.5E8, 'NaN');"),
        'DELETE FROM "public"."customers" WHERE "id" IN (\'4\');',
        "COMMIT;",
    ]


def test_mysql_gets_numbers_and_booleans_bare_for_its_bit_and_tinyint_columns():
    statement = delete_statement("mariadb", "shop.customers", ROW, FORMS, key_condition("mariadb", ["id"], [["4"]]))
    assert "VALUES (4, 'O''Brien', FROM_BASE64('AAE='), NULL, 1, -2.5E8, 'NaN');" in statement
    assert statement.startswith("SET time_zone = '+00:00';\nBEGIN;\n")


def test_each_lake_type_is_written_back_in_its_form():
    assert [value_form(t) for t in (T.LongType(), T.DecimalType(10, 2), T.DoubleType(), T.BooleanType(),
                                    T.BinaryType(), T.StringType(), T.TimestampType(), T.DateType())] == \
        ["number", "number", "number", "boolean", "binary", "text", "text", "text"]


def test_repair_without_a_signal_table_says_what_to_set():
    with pytest.raises(LakecompactError, match=r"expected \[verify\] signal_table: the connector's signalling table"):
        require_signal_table(VerifyConfig(jdbc_url="jdbc:postgresql://db:5432/shop"))


@pytest.mark.parametrize(("kind", "written"), [
    ("postgresql", """"id" IN ('O''Brien', E'a\\\\b''c')"""),  # an escape string: right whatever the server's mode
    ("mariadb", """`id` IN ('O''Brien', 'a\\\\b''c')"""),
])
def test_a_quote_or_backslash_in_a_key_stays_inside_its_literal(kind, written):
    assert key_condition(kind, ["id"], [["O'Brien"], ["a\\b'c"]]) == written


def test_a_signal_table_that_is_not_a_table_name_is_refused_when_the_config_loads():
    with pytest.raises(LakecompactError, match=r"verify.signal_table: expected the connector's signalling table"):
        VerifyConfig(jdbc_url="jdbc:postgresql://db:5432/shop", signal_table="x; DROP TABLE y").validate("verify")
