"""`bench spark`'s throughput figures: each bridge run is paired with stock's run of the same repeat."""
import pytest

from bridge.plugin.bench import Run, by_cpu, by_rate, paired, percent


def test_pairs_follow_a_machine_that_slows_over_the_sitting() -> None:
    # the machine halves its speed over the repeats; the bridge runs at 96% of stock in each pair
    stock = [Run(600, 4.0, 0.0), Run(400, 6.0, 0.0), Run(300, 8.0, 0.0)]
    bridge = [Run(576, 4.1, 0.06), Run(384, 6.2, 0.05), Run(288, 8.3, 0.07)]
    assert paired(bridge, stock, by_rate) == pytest.approx([0.96, 0.96, 0.96])
    assert paired(bridge, stock, by_cpu) == pytest.approx([4.0 / 4.16, 6.0 / 6.25, 8.0 / 8.37])
    assert percent(paired(bridge, stock, by_rate)) == "96% (96%, 96%, 96%)"


def test_a_repeat_without_its_pair_is_an_error_not_a_shorter_median() -> None:
    with pytest.raises(ValueError):
        paired([Run(1, 1, 0)], [], by_rate)
