"""IdTable: a dense id's value in the list, any other in the dictionary, the same answers either way."""
from __future__ import annotations

import pytest

from policies.common.idtable import SPARE, IdTable


def test_dense_far_and_negative_ids_read_back() -> None:
    t: IdTable[str] = IdTable()
    far = 10 * SPARE
    for key in (0, 3, far, -7, SPARE // 2):
        t.set(key, f"v{key}")
    assert [t.get(k) for k in (0, 3, far, -7, SPARE // 2)] == ["v0", "v3", f"v{far}", "v-7", f"v{SPARE // 2}"]
    assert t.get(1) is None and t.get(far + 1) is None and 2 not in t and far in t
    assert t[3] == "v3"
    with pytest.raises(KeyError):
        t[4]


def test_a_far_id_the_list_grows_over_stays_readable_and_removable() -> None:
    t: IdTable[int] = IdTable()
    far = 3 * SPARE                  # beyond the list's reach at first: in the dictionary
    t.set(far, 1)
    for key in range(far):           # the list grows past it
        t.set(key, key)
    assert t.get(far) == 1 and t.pop(far) == 1 and t.get(far) is None and t.pop(far) is None
    t.set(far, 2)
    assert t[far] == 2 and t.pop(5) == 5 and 5 not in t and t.get(6) == 6
