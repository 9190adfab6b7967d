"""The result comparison used to check Spark's TPC-H answers against DuckDB's."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from workloads.tpch.compare import compare_results
from workloads.tpch.queries import for_spark, is_ordered


def test_decimal_and_double_within_tolerance_are_equal() -> None:
    spark = [("A", Decimal("25.575155"), 3)]
    duck = [("A", 25.5751546012, 3)]
    assert compare_results(spark, duck, ordered=True).equal


def test_numeric_difference_beyond_tolerance_is_reported() -> None:
    verdict = compare_results([("A", 1.0)], [("A", 1.1)], ordered=True)
    assert not verdict.equal
    assert "row 0 column 1" in verdict.detail


def test_unordered_results_ignore_row_order() -> None:
    rows = [("b", dt.date(1995, 1, 1)), ("a", None)]
    assert compare_results(rows, rows[::-1], ordered=False).equal


def test_ordered_results_respect_row_order() -> None:
    rows = [("b", 1), ("a", 2)]
    assert not compare_results(rows, rows[::-1], ordered=True).equal


def test_row_count_mismatch() -> None:
    verdict = compare_results([("a",)], [], ordered=False)
    assert (verdict.equal, verdict.detail) == (False, "1 rows, expected 0")


def test_spark_text_drops_trailing_semicolon() -> None:
    assert for_spark("SELECT 1\nFROM t;\n") == "SELECT 1\nFROM t"


def test_order_by_detection() -> None:
    assert is_ordered("select a from t order  by a")
    assert not is_ordered("select a from t group by a")
