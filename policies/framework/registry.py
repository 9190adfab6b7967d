"""Policy names -> factories, with typed, validated configs.

* Built-in policies are listed in one place, :data:`BUILTINS` (name -> ``"module:ENTRY"``),
  and imported only when first used.
* Third-party packages add policies through the entry-point group ``schedbridge.policies``;
  each entry point must load to a :class:`PolicyEntry`.
* A :class:`PolicyEntry` names a factory ``factory(config, env) -> policy`` and the config
  dataclass the factory takes. Configs validate themselves in ``__post_init__`` (raise
  ``ValueError``); :func:`parse_settings` turns ``--param key=value`` strings into one.
* Unknown or duplicate names, unknown keys and bad values raise :class:`RegistryError` /
  :class:`ConfigError` whose message lists what is valid.
"""
from __future__ import annotations

import dataclasses
import difflib
import enum
import importlib
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from policies.framework.api import PolicyEnv, check_policy
from policies.framework.standins import STAND_INS
from policies.framework.standins import STOCK as STOCK  # re-exported: bridge/ reaches stand-ins here
from policies.framework.standins import StandIn as StandIn

ENTRY_POINT_GROUP = "schedbridge.policies"

# The one list of built-in policies: name -> "module:attribute" holding a PolicyEntry.
BUILTINS: dict[str, str] = {
    "fifo": "policies.stock.fifo:ENTRY",
    "fair": "policies.stock.fair:ENTRY",
    "kairos": "policies.kairos.kairos:ENTRY",
    "bigc": "policies.kairos.bigc:ENTRY",
    "eagle": "policies.eagle.eagle:ENTRY",
    "sparrow": "policies.eagle.sparrow:ENTRY",
    "hawk": "policies.eagle.hawk:ENTRY",
    "lwl": "policies.eagle.lwl:ENTRY",
    "dlwl": "policies.eagle.dlwl:ENTRY",
    "falcon": "policies.falcon.policy:ENTRY",
    "natjam": "policies.falcon.natjam:ENTRY",
    "amoeba": "policies.falcon.amoeba:ENTRY",
    "srpt-preempt": "policies.falcon.srpt_preemptive:ENTRY",
    "snb": "policies.falcon.snb:ENTRY",
    "bf-js": "policies.psychas.policy:BF_JS",
    "fifo-ff": "policies.psychas.policy:FIFO_FF",
    "vqs": "policies.psychas.policy:VQS",
    "vqs-bf": "policies.psychas.policy:VQS_BF",
    "ursa": "policies.ursa.policy:URSA",
    "ursa-per-task": "policies.ursa.policy:URSA_PER_TASK",
    "capacity": "policies.ursa.policy:CAPACITY",
    "tetris": "policies.ursa.policy:TETRIS",
    "tetris2": "policies.ursa.policy:TETRIS2",
}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a mistyped ``word``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class RegistryError(KeyError):
    """Unknown or duplicate policy name, or a broken entry point."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain message
        return str(self.args[0])


class ConfigError(ValueError):
    """A configuration key or value is invalid."""


def one_extra_task(config: Any) -> int:
    """The default room a preempting policy needs per node: one suspended task beside its slots."""
    return 1


@dataclass(frozen=True)
class Preempts:
    """The capability a preempting policy declares: its node side returns ``Suspend``/``Resume``.

    Live, each of its tasks runs in a one-core container that a node agent shrinks while the task
    is suspended or waiting; a node then holds up to ``extra_tasks(config)`` tasks beyond its
    slots (Kairos' Q; one suspended task per node otherwise, our reading), so the drivers raise
    each NodeManager's vcores by that much for the run. ``live`` overrides parameter defaults on
    a live cluster (e.g. a quantum scaled to jobs of seconds), below what the user sets.
    ``admits_within``: its central side never sends a node more tasks than its slots plus
    ``extra_tasks`` (Kairos' N + Q admission), so live every task off its slot holds an executor
    and works at the agents' minimum share, as a simulator at that off-slot share plays it; a
    policy whose workers queue without bound (Falcon) has only ``extra_tasks`` of them working."""

    extra_tasks: Callable[[Any], int] = one_extra_task
    live: Mapping[str, str] = dataclasses.field(default_factory=dict)  # parameter defaults on a live cluster
    admits_within: bool = False


@dataclass(frozen=True)
class PolicyEntry:
    """How to build one policy: its name, its config dataclass and its factory."""

    name: str
    config: type
    factory: Callable[[Any, PolicyEnv], Any]
    summary: str = ""
    preempts: Preempts | None = None   # its node side suspends and resumes tasks

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config):
            raise TypeError(f"policy {self.name!r}: config must be a dataclass type")


class Registry:
    """A mutable name -> PolicyEntry map; :func:`default_registry` has the built-ins."""

    def __init__(self) -> None:
        self._entries: dict[str, PolicyEntry | str] = {}

    def register(self, entry: PolicyEntry | str, name: str | None = None) -> None:
        """Add a policy (an entry, or a lazy ``"module:attr"`` reference with ``name``)."""
        key = entry.name if isinstance(entry, PolicyEntry) else name
        if not key:
            raise RegistryError("a lazily registered policy needs a name")
        if key in self._entries:
            raise RegistryError(f"policy {key!r} is already registered; registered: {self.names()}")
        self._entries[key] = entry

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> PolicyEntry:
        try:
            entry = self._entries[name]
        except KeyError:
            raise RegistryError(f"unknown policy {name!r}{did_you_mean(name, self._entries)}; "
                                f"known policies: {', '.join(self.names())}") from None
        if isinstance(entry, str):
            entry = _load_ref(entry, name)
            self._entries[name] = entry
        return entry

    def config(self, name: str, settings: Iterable[str] | Mapping[str, Any] = ()) -> Any:
        """The config dataclass of ``name`` built from defaults plus ``settings``."""
        entry = self.get(name)
        if isinstance(settings, Mapping):
            return make_config(entry.config, dict(settings), policy=name)
        return parse_settings(entry.config, settings, policy=name)

    def create(self, name: str, env: PolicyEnv, config: Any = None) -> Any:
        """Build policy ``name`` with ``config`` (defaults if None) and check it conforms."""
        entry = self.get(name)
        if config is None:
            config = make_config(entry.config, {}, policy=name)
        elif not isinstance(config, entry.config):
            raise ConfigError(f"policy {name!r} takes a {entry.config.__name__}, got {type(config).__name__}")
        policy = entry.factory(config, env)
        status = check_policy(policy)
        if not status.ok:
            raise RegistryError(f"policy {name!r} does not conform to the contract: {status.reason}")
        return policy

    def load_entry_points(self) -> None:
        """Register every policy of the entry-point group ``schedbridge.policies``."""
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in self._entries:
                raise RegistryError(f"entry point {ep.value!r} registers policy {ep.name!r}, which "
                                    f"already exists; registered: {self.names()}")
            self._entries[ep.name] = f"{ep.value}"


def _load_ref(ref: str, name: str) -> PolicyEntry:
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise RegistryError(f"policy {name!r}: cannot load {ref!r}: {e}") from e
    if callable(obj) and not isinstance(obj, PolicyEntry):
        obj = obj()
    if not isinstance(obj, PolicyEntry):
        raise RegistryError(f"policy {name!r}: {ref!r} is not a PolicyEntry")
    if obj.name != name:
        raise RegistryError(f"policy {name!r}: {ref!r} declares the name {obj.name!r}")
    return obj


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The process-wide registry: built-ins plus installed entry points (built once)."""
    global _DEFAULT
    if _DEFAULT is None:
        reg = Registry()
        for name, ref in BUILTINS.items():
            reg.register(ref, name=name)
        reg.load_entry_points()
        _DEFAULT = reg
    return _DEFAULT


def names() -> list[str]:
    return default_registry().names()


def create(name: str, env: PolicyEnv, config: Any = None) -> Any:
    return default_registry().create(name, env, config)


def config_for(name: str, settings: Iterable[str] | Mapping[str, Any] = ()) -> Any:
    return default_registry().config(name, settings)


def stand_in(name: str) -> StandIn | None:
    """The stand-in scheduler ``name`` (Spark's own, run without the plugin), or None for a policy."""
    return STAND_INS.get(name)


def sim_model(name: str) -> str:
    """The registered policy the simulator runs for live ``name``: a stand-in's model, or itself."""
    entry = stand_in(name)
    return name if entry is None else entry.sim_model


def stand_ins_hint() -> str:
    """``stock (...) or stock-fair (...)``: what an unknown-policy error offers, beside the registered
    policies, in a command that also runs the stand-ins."""
    return " or ".join(f"{s.name} ({s.summary})" for s in STAND_INS.values())


# ---------------------------------------------------------------------------------------------
# --param key=value -> config dataclass
# ---------------------------------------------------------------------------------------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def param_text(value: Any) -> str:
    """A parameter value as ``--param KEY=VALUE`` takes it back (``roulette``, ``true``, ``1,2``):
    the one spelling of values in ``--list-policies`` and in the parser's errors."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, (tuple, list)):
        return ",".join(map(param_text, value))
    return str(value)


def _convert(tp: Any, text: Any, key: str, policy: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if isinstance(text, str) and text.lower() in ("none", "null") and len(args) < len(typing.get_args(tp)):
            return None
        errors = []
        for a in args:
            try:
                return _convert(a, text, key, policy)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{policy}: bad value for {key!r}")
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        for c in choices:
            if str(c) == str(text):
                return c
        raise ConfigError(f"{policy}: {key}={text!r} is not one of {', '.join(map(param_text, choices))}")
    if origin in (tuple, list):
        inner = typing.get_args(tp)[0] if typing.get_args(tp) else str
        items = text if isinstance(text, (tuple, list)) else [x for x in str(text).split(",") if x.strip()]
        return tuple(_convert(inner, x.strip() if isinstance(x, str) else x, key, policy) for x in items)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for m in tp:
            if str(text) in (m.name, str(m.value)) or text is m:
                return m
        raise ConfigError(f"{policy}: {key}={text!r} is not one of {', '.join(map(param_text, tp))}")
    if tp is bool:
        if isinstance(text, bool):
            return text
        t = str(text).strip().lower()
        if t in _TRUE:
            return True
        if t in _FALSE:
            return False
        raise ConfigError(f"{policy}: {key}={text!r} is not a boolean (use true/false)")
    if tp in (int, float, str):
        if tp is int and isinstance(text, float) and not text.is_integer():
            raise ConfigError(f"{policy}: {key}={text!r} is not an integer")
        try:
            value = tp(text)
        except (TypeError, ValueError):
            value = _whole(text) if tp is int else None
            if value is None:
                kind = {int: "an integer", float: "a number", str: "a string"}[tp]
                raise ConfigError(f"{policy}: {key}={text!r} is not {kind}") from None
        if tp is float and not math.isfinite(value):  # no parameter means anything by NaN or inf
            raise ConfigError(f"{policy}: {key}={text!r} is not a finite number")
        return value
    return text


def _whole(text: Any) -> int | None:
    """``1e12`` as the integer it spells (counts are written so), so that its range, not its
    spelling, is what an error names; None if ``text`` is not a whole number."""
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number.is_integer() else None


def make_config(cls: type, values: dict[str, Any], *, policy: str = "") -> Any:
    """Build config ``cls`` from ``values`` (converted by field type), validating the result."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        hint = "".join(did_you_mean(k, fields) for k in unknown)
        raise ConfigError(f"{policy or cls.__name__}: unknown parameter(s) {unknown}{hint}; "
                          f"valid parameters: {', '.join(sorted(fields)) or '(none)'}")
    kwargs = {k: _convert(hints[k], v, k, policy or cls.__name__) for k, v in values.items()}
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{policy or cls.__name__}: {e}") from None


def parse_settings(cls: type, settings: Iterable[str], *, policy: str = "") -> Any:
    """``["key=value", ...]`` -> config ``cls``. A key given twice is an error."""
    values: dict[str, str] = {}
    for s in settings:
        key, sep, val = s.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{policy or cls.__name__}: expected key=value, got {s!r}")
        if key in values:
            raise ConfigError(f"{policy or cls.__name__}: parameter {key!r} given twice")
        values[key] = val.strip()
    return make_config(cls, values, policy=policy)


def describe(cls: type) -> list[tuple[str, str, Any]]:
    """(name, type, default) for each field of a config dataclass, for help texts."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append((f.name, getattr(hints[f.name], "__name__", str(hints[f.name])), default))
    return out
