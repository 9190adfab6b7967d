"""Helpers of the multi-resource experiments: the claims table, J choice, Markdown."""
import pandas as pd

from bridge.apps.experiments import EXPERIMENTS
from bridge.apps.experiments_multires import falcon_claims, smallest_j
from bridge.common.tables import markdown


def _setting(makespans: dict[str, float], disorders: dict[str, int]) -> list[dict]:
    return [{"workers": 1, "rate": 1.0, "n_jobs": 1, "policy": p, "makespan": m, "preemptions": 1,
             "disorders": disorders[p], "throughput_tasks_per_ms": 1 / m, "avg_utilization": 1 / m}
            for p, m in makespans.items()]


def test_claims_count_the_settings_where_an_ordering_holds():
    names = ("falcon", "natjam", "amoeba", "srpt-preempt", "snb")
    good = _setting(dict(zip(names, (1.0, 2.0, 3.0, 4.0, 5.0))), dict(zip(names, (0, 1, 2, 3, 4))))
    bad = _setting(dict(zip(names, (3.0, 2.0, 1.0, 4.0, 5.0))), dict(zip(names, (0, 1, 2, 3, 4))))
    for row in bad:
        row["n_jobs"] = 2
    claims = dict(falcon_claims(pd.DataFrame(good + bad)).itertuples(index=False))
    assert claims["makespan: Falcon < Natjam < Amoeba (Figs. 4, 7)"] == "1/2"
    assert claims["disorders: Falcon < Natjam < Amoeba < SRPT < SNB (Figs. 5b, 6b)"] == "2/2"
    assert claims["preemptions: Falcon lowest (Figs. 5a, 6a)"] == "0/2"  # ties are not wins


def test_smallest_j_bounds_the_tiny_fraction():
    sizes = [0.001] + [0.3] * 199  # 0.5% tiny at any J
    assert smallest_j(sizes) == 2
    assert smallest_j([0.01] * 5 + [0.3] * 95) == 7  # 0.01 ≤ 1/64 but > 1/128


def test_markdown_and_registry():
    assert markdown(pd.DataFrame({"a": [1.23456], "b": ["x"]})) == "| a | b |\n|---|---|\n| 1.23 | x |\n"
    assert {"falcon-orderings", "psychas-stability", "ursa-placement", "cross-family"} <= set(EXPERIMENTS)
