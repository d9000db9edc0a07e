"""What key-column names say (`platform/key_names.py`): conventions of real schemas, each a
case of evidence and a case where the evidence must not be found."""

from __future__ import annotations

import pytest

from dia_assets.contracts.interpretation import Column, Source
from dia_assets.platform.key_names import (
    SchemaNames,
    abbreviates,
    abbreviates_run,
    extension_of,
    id_like,
    key_suffix,
)


def _source(name: str, *columns: str) -> Source:
    return Source(name=name, path=f"{name}.csv", format="csv", content_hash="x", size_bytes=1,
                  columns=[Column(name=c, original_name=c, physical_type="VARCHAR") for c in columns])


TPCH = [
    _source("customer", "c_custkey", "c_name", "c_nationkey", "c_acctbal"),
    _source("orders", "o_orderkey", "o_custkey", "o_orderdate", "o_comment"),
    _source("lineitem", "l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity"),
    _source("part", "p_partkey", "p_name", "p_size"),
    _source("supplier", "s_suppkey", "s_name", "s_nationkey"),
    _source("partsupp", "ps_partkey", "ps_suppkey", "ps_availqty"),
    _source("nation", "n_nationkey", "n_name", "n_regionkey"),
]
STAR = [
    _source("store_sales", "ss_sold_date_sk", "ss_item_sk", "ss_cdemo_sk", "ss_hdemo_sk", "ss_addr_sk",
            "ss_quantity"),
    _source("customer_demographics", "cd_demo_sk", "cd_gender", "cd_marital_status"),
    _source("household_demographics", "hd_demo_sk", "hd_buy_potential", "hd_dep_count"),
    _source("customer_address", "ca_address_sk", "ca_address_id", "ca_city"),
    _source("date_dim", "d_date_sk", "d_date", "d_year"),
    _source("item", "i_item_sk", "i_item_id", "i_brand"),
]
DIMS = [_source("dim_customer", "customer_key", "name"), _source("dim_product", "product_key", "name"),
        _source("dim_store", "store_key", "city"), _source("fact_sales", "customer_key", "product_key")]


def test_key_suffixes_glued_or_not():
    assert key_suffix(("customer", "id")) == (("customer",), "id")
    assert key_suffix(("custkey",)) == (("cust",), "key")
    assert key_suffix(("item", "sk")) == (("item",), "sk")
    assert key_suffix(("valid",)) == (("valid",), None)  # a word, not val + id
    assert key_suffix(("task",)) == (("task",), None)
    assert id_like("c_custkey") and id_like("ss_item_sk") and not id_like("p_size") and not id_like("l_quantity")


def test_abbreviations():
    assert abbreviates("cust", "customer") and abbreviates("dt", "date") and abbreviates("addr", "address")
    assert not abbreviates("size", "supplier") and not abbreviates("parent", "part")
    assert abbreviates_run("cdemo", ("customer", "demographics")) and abbreviates_run("cd", ("customer", "demographics"))
    assert not abbreviates_run("hdemo", ("customer", "demographics"))


def test_table_prefixes_are_learned_from_the_columns():
    names = SchemaNames(TPCH + STAR)
    assert names.prefixes["lineitem"] == "l" and names.prefixes["partsupp"] == "ps"
    assert names.prefixes["customer_demographics"] == "cd"
    assert names.stripped("orders", "o_custkey") == ("custkey",)


@pytest.mark.parametrize(("child", "column", "parent", "key", "level"), [
    ("orders", "o_custkey", "customer", "c_custkey", "same"),  # prefixes set aside
    ("lineitem", "l_suppkey", "supplier", "s_suppkey", "same"),
    ("store_sales", "ss_cdemo_sk", "customer_demographics", "cd_demo_sk", "abbrev"),  # c(ustomer) demo(graphics)
    ("store_sales", "ss_hdemo_sk", "household_demographics", "hd_demo_sk", "abbrev"),
    ("store_sales", "ss_addr_sk", "customer_address", "ca_address_sk", "abbrev"),
    ("store_sales", "ss_sold_date_sk", "date_dim", "d_date_sk", "role"),
    ("store_sales", "ss_item_sk", "item", "i_item_sk", "same"),
])
def test_prefixed_references(child, column, parent, key, level):
    ev = SchemaNames(TPCH + STAR).evidence(child, column, parent, key)
    assert ev.level == level and ev.score >= 0.8, ev


@pytest.mark.parametrize(("child", "column", "parent", "key"), [
    ("part", "p_size", "supplier", "s_suppkey"),  # a size is no supplier
    ("lineitem", "l_linenumber", "orders", "o_orderkey"),
    ("store_sales", "ss_hdemo_sk", "customer_demographics", "cd_demo_sk"),  # the other demographics
    ("store_sales", "ss_quantity", "item", "i_item_sk"),
])
def test_no_evidence_between_unrelated_names(child, column, parent, key):
    assert SchemaNames(TPCH + STAR).evidence(child, column, parent, key).score < 0.8


def test_affixes_and_role_names():
    names = SchemaNames(DIMS)
    assert names.entity("dim_customer") == ("customer",)
    people = [_source("employees", "employee_number", "reports_to", "office_code"),
              _source("customers", "customer_number", "sales_rep_employee_number"),
              _source("orders", "order_id", "ship_to_address_id", "bill_to_address_id"),
              _source("addresses", "address_id", "city")]
    names = SchemaNames(people)
    assert names.evidence("customers", "sales_rep_employee_number", "employees", "employee_number").level == "role"
    assert names.evidence("orders", "ship_to_address_id", "addresses", "address_id").level == "role"
    assert names.evidence("employees", "reports_to", "employees", "employee_number").level == "hierarchy"
    # a surrogate key and a business key: the suffix tells them apart
    dim = [_source("customer", "customer_sk", "customer_id"), _source("sales", "customer_sk")]
    names = SchemaNames(dim)
    assert names.evidence("sales", "customer_sk", "customer", "customer_sk").score > names.evidence(
        "sales", "customer_sk", "customer", "customer_id").score


def test_extension_tables_are_named_after_their_base():
    assert extension_of("customer_details", ("customer",)) and extension_of("player_ext", ("player",))
    assert extension_of("courextra", ("course",))  # a short form of the base, then the aspect
    assert not extension_of("course", ("courextra",)) and not extension_of("employee", ("person",))
    assert not extension_of("players", ("player", "detail"))
