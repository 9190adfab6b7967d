"""Policy names -> round planners for the Spark host (the daemon and in-process sessions)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from bridge.live.spark_fifo import FifoPlanner
from bridge.live.spark_engine import EnginePlanner
from policies.registry import ConfigError, RegistryError

if TYPE_CHECKING:  # spark_host builds planners from attach requests through this module
    from bridge.live.spark_host import RoundPlanner


def make_planner(name: str, params: Mapping[str, str] | None = None) -> RoundPlanner:
    """``spark-fifo`` (no policy engine) or any registered policy, driven by the engine adapter.

    Unknown names and parameters raise ValueError (the registry's errors list what is valid)."""
    if name == FifoPlanner.name:
        return FifoPlanner(params)
    try:
        return EnginePlanner(name, params)
    except RegistryError as e:
        raise ValueError(f"{e}, or {FifoPlanner.name}") from None
    except ConfigError as e:
        raise ValueError(str(e)) from None
