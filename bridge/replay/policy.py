"""The one place where a policy name becomes Spark settings (the hook the Spark plugin swaps).

Until the schedbridge Spark plugin (`sparkplugin/`, master `spark-schedbridge://INNER`, key
`spark.schedbridge.policy`) is wired in, every policy runs on stock Spark on YARN and the name is
only recorded with the results; the policy is still checked against the registry so a typo
fails before anything is submitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from policies.registry import default_registry


@dataclass(frozen=True)
class SparkSettings:
    master: str
    conf: dict[str, str] = field(default_factory=dict)


def spark_settings(policy: str) -> SparkSettings:
    """Master URL and conf that make Spark schedule with `policy` (raises RegistryError if unknown)."""
    default_registry().get(policy)
    return SparkSettings(master="yarn")
