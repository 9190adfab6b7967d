"""The documentation stays readable: the README at most 250 lines, every page of docs/ at most 600,
every page listed in docs/README.md's index, and every page the index names present."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
README_LIMIT = 250
PAGE_LIMIT = 600


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def pages() -> list[Path]:
    """Every Markdown page of docs/, the index among them."""
    return sorted(DOCS.rglob("*.md"))


def indexed() -> set[str]:
    """The pages docs/README.md names, as paths relative to docs/."""
    return set(re.findall(r"^\| `([\w./-]+\.md)` \|", INDEX.read_text(), re.MULTILINE))


def test_the_readme_is_at_most_250_lines() -> None:
    assert lines(ROOT / "README.md") <= README_LIMIT


def test_every_docs_page_is_at_most_600_lines() -> None:
    assert pages(), f"no pages under {DOCS}"
    long = {str(p.relative_to(ROOT)): lines(p) for p in pages() if lines(p) > PAGE_LIMIT}
    assert not long, f"over {PAGE_LIMIT} lines: {long}"


def test_the_index_lists_every_page_and_names_none_that_is_missing() -> None:
    on_disk = {str(p.relative_to(DOCS)) for p in pages()} - {"README.md"}
    named = indexed()
    assert on_disk - named == set(), "pages missing from docs/README.md"
    assert named - on_disk == set(), "docs/README.md names pages that do not exist"
