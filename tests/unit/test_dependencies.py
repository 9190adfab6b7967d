"""pyproject.toml's ranges, constraints.txt's pins and the extras agree.

`make setup` installs ``-c constraints.txt -e '.[all,test]'``: each requirement must be pinned
there, at a version its range admits, or pip would silently pick another version (or refuse).
``bridge.common.extras.EXTRA_OF`` must name, for each optional module, the extra that really brings it,
or a user is told to install the wrong one."""
from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bridge.common.extras import EXTRA_OF

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[Requirement]] = {name: [Requirement(r) for r in reqs]
                                        for name, reqs in PROJECT["optional-dependencies"].items()}


def pins() -> dict[str, str]:
    """constraints.txt as canonical name -> exact version."""
    out = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[canonicalize_name(name)] = version.strip()
    return out


def test_every_requirement_is_pinned_at_a_version_its_range_admits() -> None:
    pinned = pins()
    requirements = [Requirement(r) for r in PROJECT["dependencies"]] + \
        [r for reqs in EXTRAS.values() for r in reqs if r.name != PROJECT["name"]]
    for req in requirements:
        version = pinned.get(canonicalize_name(req.name))
        assert version is not None, f"{req.name} is not pinned in constraints.txt"
        assert req.specifier.contains(version), f"constraints.txt pins {req.name}=={version} outside {req}"
        assert not any(spec.operator == "==" for spec in req.specifier), f"{req} is an exact pin in pyproject.toml"


def test_all_is_every_extra_but_the_tests() -> None:
    (everything,) = EXTRAS["all"]
    assert everything.name == PROJECT["name"]
    assert everything.extras == set(EXTRAS) - {"all", "test"}


def test_each_optional_module_comes_with_the_extra_named_for_it() -> None:
    """The module's distribution is one the extra requires, or a dependency of one (py4j)."""
    owners = importlib.metadata.packages_distributions()
    for module, extra in EXTRA_OF.items():
        named = {canonicalize_name(r.name) for r in EXTRAS[extra]}
        brought = named | {canonicalize_name(Requirement(r).name) for dist in named
                           for r in importlib.metadata.requires(dist) or () if "extra ==" not in r}
        assert {canonicalize_name(d) for d in owners[module]} <= brought, (module, extra, brought)
