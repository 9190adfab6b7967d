"""TPC-H: Parquet data from tpchgen-cli, query texts and reference answers from DuckDB, runs on Spark SQL."""
from __future__ import annotations

QUERY_NUMBERS = tuple(range(1, 23))


def parse_query_numbers(text: str) -> tuple[int, ...]:
    """`1,3,6` as (1, 3, 6): sorted, each once; anything but numbers 1..22 is refused, naming it."""
    numbers = set()
    for item in text.split(","):
        try:
            number = int(item.strip())
        except ValueError:
            raise ValueError(f"expected query numbers separated by commas, got {item.strip()!r}") from None
        if number not in QUERY_NUMBERS:
            raise ValueError(f"TPC-H has queries 1 to 22, not {number}")
        numbers.add(number)
    return tuple(sorted(numbers))
