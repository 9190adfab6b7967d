"""The cluster a command talks to when it names none: what the command line registered (the local
testbed, ``bridge.cli``), built on first use. Registering imports nothing, so a command that never
asks for a cluster (``simulate``, ``report``) pays nothing for it at start."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bridge.target.config import ClusterTarget


class DefaultCluster(Protocol):
    """The cluster a command talks to when no configuration directory is named."""

    @property
    def conf_dir(self) -> Path:
        """Its client configuration: a conf dir given that is this one means this cluster."""

    def check_running(self) -> None:
        """Raise ``HadoopConfError`` naming both ways out if it is not running."""

    def target(self) -> ClusterTarget:
        """Its addresses and Spark environment (``origin``: its own name)."""


_make: Callable[[], DefaultCluster] | None = None  # what `register_default` was last given
_built: DefaultCluster | None = None


def register_default(make: Callable[[], DefaultCluster] | None) -> None:
    """Make the cluster ``make`` builds (when first asked for) the one a command talks to when
    none is named (None: no default)."""
    global _make, _built
    _make, _built = make, None


def default_cluster() -> DefaultCluster | None:
    """The registered default cluster, if any."""
    global _built
    if _built is None and _make is not None:
        _built = _make()
    return _built
