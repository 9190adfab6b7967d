"""The `schedbridge` command line: one group, subcommands registered from their own modules."""
from __future__ import annotations

import importlib

import click

from bridge.common.extras import MissingExtra, missing_extra
from bridge.target.default import DefaultCluster, register_default

# name -> "module:attribute" of a click command; imported lazily so `schedbridge --help`
# stays fast and a subcommand's heavy imports (pandas, pyspark) load only when used.
SUBCOMMANDS: dict[str, str] = {
    "simulate": "bridge.sim.cli:simulate",
    "bench": "bridge.cli:bench",
    "trace": "bridge.apps.traceimport.cli:trace",
    "testbed": "bridge.apps.testbed_cli:testbed",
    "demo": "bridge.apps.demo:demo",
    "agent": "bridge.agent.cli:agent",
    "experiment": "bridge.apps.experiments:experiment",
    "serve": "bridge.plugin.daemon:serve",
    "submit": "bridge.launch.submit:submit",
    "replay": "bridge.replay.cli:replay",
    "report": "bridge.apps.report.cli:report",
    "rank": "bridge.apps.rank.cli:rank",
    "sim-vs-live": "bridge.apps.simlive.cli:sim_vs_live",
    "tpch": "bridge.apps.tpch:tpch",
    "estimates": "bridge.apps.estimates_cli:estimates",
}
# `schedbridge bench NAME`: each benchmark lives beside what it measures.
BENCHMARKS: dict[str, str] = {
    "sim": "bridge.sim.bench:sim",
    "sim-growth": "bridge.sim.growth:sim_growth",
    "sim-vs-reference": "bridge.sim.refbench:sim_vs_reference",
    "idle-slots": "bridge.apps.report.idle_bench:idle_slots",
    "agent": "bridge.agent.bench:agent",
    "testbed": "bridge.testbed.bench:testbed",
    "spark": "bridge.plugin.bench:spark",
    "spark-tpch": "bridge.apps.tpch_bench:spark_tpch",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args, targets: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.targets = SUBCOMMANDS if targets is None else targets

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.targets)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = self.targets.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            missing = missing_extra(e, f"`{ctx.command_path} {name}`")
            if missing is None:
                raise
            return _needs_extra(name, missing)
        return getattr(module, attr)

    def invoke(self, ctx: click.Context) -> object:
        """Run the subcommand; an optional package it imports late and lacks ends it with the
        extra to install (``bridge.common.extras``), not a traceback."""
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as e:
            missing = missing_extra(e, f"`{ctx.command_path} {ctx.invoked_subcommand}`")
            if missing is None:
                raise
            raise missing from None


def _needs_extra(name: str, missing: MissingExtra) -> click.Command:
    """A stand-in for a subcommand whose module needs a missing extra: ``--help`` lists it with
    the install command, and running it (``--help`` included) fails with that one line."""
    def fail() -> None:
        raise missing

    return click.Command(name, callback=fail, help=missing.message,
                         short_help=f"(needs the [{missing.extra}] extra)", add_help_option=False,
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True})


@click.group(cls=LazyGroup)
@click.version_option(package_name="schedbridge")
def main() -> None:
    """schedbridge: research scheduling policies on Apache Hadoop YARN and Apache Spark."""
    register_default(_local_testbed)  # a command given no Hadoop configuration talks to the local testbed


def _local_testbed() -> DefaultCluster:
    """The command line's default cluster (no lower layer names the testbed), imported only by a
    command that asks for it."""
    from bridge.testbed.target import LocalTestbed

    return LocalTestbed()


@click.group(cls=LazyGroup, targets=BENCHMARKS)
def bench() -> None:
    """Benchmarks (reported, never asserted)."""


if __name__ == "__main__":  # `python -m bridge.cli ...`, as the installed `schedbridge`
    main()
