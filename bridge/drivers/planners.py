"""What a policy host asks of a planner (`RoundPlanner`) and policy names -> planners."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from bridge.drivers.spark.engine import EnginePlanner
from bridge.drivers.spark.fifo import FifoPlanner
from bridge.drivers.spark.state import AppState, LiveCluster
from bridge.protocol.messages import LiveEvent, OfferRound, Placement
from policies.framework.registry import ConfigError, RegistryError


class RoundPlanner(Protocol):
    """Turns one application's offer round into a placement; sees every application's state."""

    name: str
    settings: Any  # what the planner was built with, comparable with ``settings_for``'s results
    launch_reports: bool  # wants Spark's launches at once (the plugin then reports them in rounds without a free slot)

    def settings_for(self, params: Mapping[str, str]) -> Any:
        """The settings ``params`` would give this policy; ValueError naming a bad key or value."""

    def rebuild(self, state: AppState) -> None:
        """An application's state was rebuilt from a snapshot: drop what was derived from it."""

    def forget(self, app: str) -> None:
        """An application ended (detached, or its connection is gone): drop all of its state."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        """The placement for ``rnd``; ``events`` (already applied to ``cluster``) came with it."""

    def estimates_used(self) -> list[dict[str, object]]:
        """Each user job's runtime estimate as the policy was told it, with its source, oldest
        first (``bridge.drivers.user_jobs``); none for a planner that tells a policy no estimates."""

    def demand_faults(self) -> Mapping[str, int]:
        """Declared task demands not used as given, by kind (``malformed``, ``cut``); empty for a
        planner that reads no demands."""


BUILT_IN: dict[str, Callable[[Mapping[str, str] | None], RoundPlanner]] = {FifoPlanner.name: FifoPlanner}
"""The planners the plugin runs without a policy engine, by name (``spark-fifo``): looked up here,
beside the registered policies (``policies.framework.registry``), never compared by name elsewhere."""


def make_planner(name: str, params: Mapping[str, str] | None = None) -> RoundPlanner:
    """A built-in planner (``BUILT_IN``: no policy engine) or any registered policy, driven by the
    engine adapter.

    Unknown names and parameters raise ValueError (the registry's errors list what is valid)."""
    built_in = BUILT_IN.get(name)
    if built_in is not None:
        return built_in(params)
    try:
        return EnginePlanner(name, params)
    except RegistryError as e:
        raise ValueError(f"{e}, or {' or '.join(BUILT_IN)}") from None
    except ConfigError as e:
        raise ValueError(str(e)) from None
