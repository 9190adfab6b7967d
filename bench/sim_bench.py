"""Simulator benchmark; see ``bridge/sim/bench.py`` (same as ``schedbridge bench sim``)."""
from bridge.sim.bench import sim

if __name__ == "__main__":
    sim()
