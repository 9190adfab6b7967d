"""Falcon's complementary task packing (paper Eq. 1, §III-B1).

A master pairs each task with the partner whose dominant resource differs and whose
demand deviates most from it, so the pair fills a server more evenly than either task
alone. Demands are shares of a server's capacity (DRF-style, our reading), otherwise
cores and gigabytes could not be compared.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from policies.common.vectors import dominant

K = TypeVar("K", bound=Hashable)


def deviation(d_j: Sequence[float], d_i: Sequence[float]) -> float:
    """Eq. (1): Σ_h (d_jh − m_h)² + (d_ih − m_h)², m_h the pair's mean (= ½‖d_j − d_i‖²)."""
    score = 0.0
    for a, b in zip(d_j, d_i, strict=True):
        mean = (a + b) / 2
        score += (a - mean) ** 2 + (b - mean) ** 2
    return score


@dataclass(frozen=True)
class PackItem(Generic[K]):
    """One task offered for packing: its id and its demand as a share of capacity."""

    key: K
    share: tuple[float, ...]


def pack_complementary(items: Sequence[PackItem[K]],
                       compatible: Callable[[K, K], bool] = lambda a, b: True) -> list[tuple[K, ...]]:
    """Pair tasks greedily in list order (paper §III-B1).

    Each unpaired task T_i takes, among the still-unpaired tasks with a different dominant
    resource that ``compatible`` accepts (our reading: DAG-independent and jointly fitting
    the largest server), the one with the highest Eq. (1) deviation; ties keep the earlier
    task. Tasks without a partner stay single. Returns entities in the order they formed.
    """
    unpacked = [(item, dominant(item.share)) for item in items]
    left = Counter(dom for _, dom in unpacked)  # unpaired tasks per dominant resource
    entities: list[tuple[K, ...]] = []
    while unpacked:
        anchor, dom = unpacked.pop(0)
        left[dom] -= 1
        best: tuple[float, int] | None = None
        if len(unpacked) > left[dom]:  # a task of another dominant resource is left (else: no scan)
            for idx, (cand, cand_dom) in enumerate(unpacked):
                if cand_dom == dom or not compatible(anchor.key, cand.key):
                    continue
                dv = deviation(cand.share, anchor.share)
                if best is None or dv > best[0]:
                    best = (dv, idx)
        if best is None:
            entities.append((anchor.key,))
        else:
            partner, partner_dom = unpacked.pop(best[1])
            left[partner_dom] -= 1
            entities.append((anchor.key, partner.key))
    return entities
