"""Messages between the Spark plugin (JVM) and a policy host.

One JSON object per message, primitive fields only. The plugin sends a *round* per offer round:
free slots, runnable stages, the listener events since the last round (or, after a (re)connect or
a failure, a full *snapshot* of Spark's state plus the requested policy and parameters). The host
answers with grants (stage -> executor slots), task ids to preempt and whether Spark's own order
is its answer (``spark_order``), ``resync`` (send a snapshot next time) or ``error``. Every new
connection starts with an *attach*: the application's policy and parameters, which the host
accepts or refuses (a configuration mistake, which stops the application at start). The Java side
is ``sparkplugin/src/main/java/.../Protocol.java``.

Both sides' messages are defined once, by the JSON Schema ``sparkplugin.PROTOCOL_SCHEMA``, which
also holds the version and the size bound: each side's tests validate every message it builds
against it, and the parsers here refuse a field it does not name (a field added on one side only).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from sparkplugin import PROTOCOL_SCHEMA

_SCHEMA = json.loads(PROTOCOL_SCHEMA.read_text())
PROTOCOL_VERSION: int = _SCHEMA["$defs"]["version"]["const"]
# Largest message either side sends or reads (one JSON line); over it, the connection is closed
# with an error, never split. The same bound is Protocol.MAX_MESSAGE in Java.
MAX_MESSAGE_BYTES: int = _SCHEMA["x-max-message-bytes"]
# The fields each object of the protocol may have ($defs name -> property names).
_FIELDS = {name: frozenset(d["properties"]) for name, d in _SCHEMA["$defs"].items() if "properties" in d}


class ProtocolError(ValueError):
    """A message that does not follow this protocol."""


def _known(d: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``d`` if the schema's ``name`` object has each of its fields, else ProtocolError."""
    if unknown := d.keys() - _FIELDS[name]:
        raise ProtocolError(f"a {name} with fields the protocol does not have: {sorted(unknown)}")
    return d


@dataclass(frozen=True, slots=True)
class Slot:
    """Free task slots of one executor in this round."""

    executor: str
    host: str
    free: int


@dataclass(frozen=True, slots=True)
class StageDemand:
    """A runnable stage attempt (a Spark task set) and what it still needs."""

    stage: int
    attempt: int
    job: int
    tasks: int
    pending: int
    running: int
    locality: Mapping[str, int]   # preferred host -> pending tasks preferring it
    props: Mapping[str, str]      # job properties: the pool, the job's identity (group, tags, ...), schedbridge.*
    parents: tuple[int, ...]      # DAG parent stage ids


@dataclass(frozen=True, slots=True)
class PolicyRequest:
    """The policy and parameters an application asked for (``spark.schedbridge.policy[.<param>]``)."""

    policy: str
    params: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Launched:
    """What one grant of the previous round actually started: Spark task ids on ``executor``; or,
    ``ahead``, what the plugin launched on a :class:`Prediction` since, ahead of a grant (the host verifies it)."""

    stage: int
    attempt: int
    executor: str
    tasks: tuple[int, ...]
    ahead: bool = False


@dataclass(frozen=True, slots=True)
class OfferRound:
    app: str
    round: int
    now_ms: int
    cpus_per_task: int
    slots: tuple[Slot, ...]
    stages: tuple[StageDemand, ...]
    events: tuple[Mapping[str, Any], ...]
    snapshot: Mapping[str, Any] | None = None
    request: PolicyRequest | None = None
    launched: tuple[Launched, ...] = ()
    ahead: bool = False   # the plugin launches ahead on ``Placement.next``: predict for it


@dataclass(frozen=True, slots=True)
class Grant:
    """Let stage ``stage`` (attempt ``attempt``) use ``slots`` free slots of ``executor``."""

    stage: int
    attempt: int
    executor: str
    slots: int = 1


@dataclass(frozen=True, slots=True)
class Prediction:
    """When a slot of ``executor`` frees, the plugin may launch a task of stage ``stage`` (attempt
    ``attempt``) there at once, before asking: a launch ahead, which the next round verifies."""

    executor: str
    stage: int
    attempt: int


@dataclass(frozen=True, slots=True)
class ContainerChange:
    """A suspend or resume the policy's node side sent for one of the application's executors'
    containers (``ok``: its node agent applied it). Told to the plugin for Spark's event log and UI."""

    executor: str
    container: str
    action: str  # suspend or resume
    ok: bool


@dataclass(frozen=True, slots=True)
class Placement:
    """A round's answer. Stages and slots not granted are held back this round.

    ``spark_order``: the policy declares that, while the runnable stages and the executors stay
    the same, its answer is what Spark's own ``resourceOffers`` does (stages in Spark's order, each
    taking free slots locality first). The plugin may then serve such rounds without a round trip
    for a short while; their events reach the host with the next round it asks."""

    grants: tuple[Grant, ...] = ()
    preempt: tuple[int, ...] = field(default=())
    spark_order: bool = False
    # Free slots of the round that the policy's own state also saw free and left unused while
    # tasks waited: held by its rule (a partition, a reservation), not by a stale view. The
    # host's accounting (logged per application), not sent to the plugin.
    held: int = 0
    # The application's containers suspended or resumed since its previous reply (a preempting
    # policy on node agents); sent only when there are some.
    containers: tuple[ContainerChange, ...] = ()
    # Launches ahead (sent only when there are some): per executor, the stage a freed slot may launch
    # at once (``next``), and the launches ahead the policy did not decide, to kill (``withdraw``).
    next: tuple[Prediction, ...] = ()
    withdraw: tuple[int, ...] = ()
    # The round's launches ahead the policy's decisions confirmed, and those they did not
    # (withdrawn, or ended before the host heard of them): the host's accounting, not sent.
    hits: int = 0
    misses: int = 0
    # The hits per stage and executor: the policy's placements among the launches ahead, logged
    # beside its grants by the host; not sent.
    confirmed: tuple[Grant, ...] = ()
    # The pause of the application's predictions (in its task ends) that the round's misses started
    # (``bridge.drivers.spark.ahead.AheadBackoff``; 0: none): the host's accounting, not sent.
    paused: int = 0


def _stage(d: Mapping[str, Any]) -> StageDemand:
    _known(d, "stage")
    return StageDemand(int(d["stage"]), int(d["attempt"]), int(d["job"]), int(d["tasks"]),
                       int(d["pending"]), int(d["running"]),
                       {str(k): int(v) for k, v in d.get("locality", {}).items()},
                       {str(k): str(v) for k, v in d.get("props", {}).items()},
                       tuple(int(p) for p in d.get("parents", ())))


def _bool(x: Any) -> bool:
    """A JSON boolean (``bool("false")`` would be True)."""
    if not isinstance(x, bool):
        raise ProtocolError(f"expected true or false, got {x!r}")
    return x


def decode(text: str) -> dict[str, Any]:
    """A JSON object of this protocol version, else ProtocolError."""
    try:
        msg = json.loads(text)
    except ValueError as e:  # JSONDecodeError, and integers past Python's digit limit
        raise ProtocolError(f"not JSON: {str(e)[:200]}") from None
    except RecursionError:  # ``[[[[...`` nested deeper than the interpreter's stack
        raise ProtocolError("not a message: JSON nested too deeply") from None
    if not isinstance(msg, dict):
        raise ProtocolError("a message must be a JSON object")
    if msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol v{msg.get('v')} not supported (this host speaks v{PROTOCOL_VERSION})")
    return msg


def _request(conf: Any, name: str) -> PolicyRequest:
    """The policy request of an attach message or of a round's ``conf`` (schema object ``name``)."""
    if not isinstance(conf, Mapping) or not isinstance(conf.get("params", {}), Mapping):
        raise ProtocolError(f"malformed policy request: {conf!r}")
    _known(conf, name)
    return PolicyRequest(str(conf["policy"]), {str(k): str(v) for k, v in conf.get("params", {}).items()})


def parse_attach(msg: Mapping[str, Any]) -> tuple[str, PolicyRequest]:
    """The application and the policy request of an attach message (``kind == "attach"``)."""
    try:
        return str(msg["app"]), _request(msg, "attach")
    except KeyError as e:
        raise ProtocolError(f"malformed attach: missing {e}") from None


def parse_detach(msg: Mapping[str, Any]) -> str:
    """The application of a detach message (``kind == "detach"``)."""
    return str(_known(msg, "detach").get("app", ""))


def parse_round(msg: Mapping[str, Any]) -> OfferRound:
    """The round in a decoded message (``kind == "round"``)."""
    if msg.get("kind") != "round":
        raise ProtocolError(f"expected a round, got kind {msg.get('kind')!r}")
    _known(msg, "round")
    try:
        conf = msg.get("conf")
        snapshot = msg.get("snapshot")
        request = None if conf is None else _request(conf, "conf")
        return OfferRound(
            app=str(msg["app"]), round=int(msg["round"]), now_ms=int(msg["now_ms"]),
            cpus_per_task=int(msg["cpus_per_task"]),
            slots=tuple(Slot(str(s["executor"]), str(s["host"]), int(s["free"]))
                        for s in map(_known, msg["slots"], repeat("slot"))),
            stages=tuple(_stage(s) for s in msg["stages"]),
            events=tuple(msg.get("events", ())), request=request,
            snapshot=None if snapshot is None else _known(snapshot, "snapshot"),
            launched=tuple(Launched(int(x["stage"]), int(x["attempt"]), str(x["executor"]),
                                    tuple(int(t) for t in x["tasks"]), _bool(x.get("ahead", False)))
                           for x in map(_known, msg.get("launched", ()), repeat("launched"))),
            ahead=_bool(msg.get("ahead", False)))
    except ProtocolError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise ProtocolError(f"malformed round: {e!r}") from None


def encode_placement(p: Placement, round_: int, host_us: int) -> str:
    """The reply to round ``round_`` (the plugin drops a reply naming another round); ``host_us``:
    the host's own time on the round so far, which the plugin splits its call's time by."""
    return json.dumps({
        "v": PROTOCOL_VERSION,
        "round": round_,
        "assign": [{"stage": g.stage, "attempt": g.attempt, "executor": g.executor, "slots": g.slots}
                   for g in p.grants],
        "preempt": list(p.preempt),
        "spark_order": p.spark_order,
        "host_us": host_us,
        **({"containers": [{"executor": c.executor, "container": c.container, "action": c.action, "ok": c.ok}
                           for c in p.containers]} if p.containers else {}),
        **({"next": [{"executor": x.executor, "stage": x.stage, "attempt": x.attempt} for x in p.next]}
           if p.next else {}),
        **({"withdraw": list(p.withdraw)} if p.withdraw else {}),
    }, separators=(",", ":"))


def encode_error(reason: str, round_: int | None = None) -> str:
    return json.dumps({"v": PROTOCOL_VERSION, "error": reason[:2000],
                       **({} if round_ is None else {"round": round_})})


def encode_resync(round_: int) -> str:
    return json.dumps({"v": PROTOCOL_VERSION, "round": round_, "resync": True})


def encode_attached(policy: str, launch_reports: bool = False) -> str:
    """``launch_reports``: the host wants launches at once, even in rounds without a free slot."""
    return json.dumps({"v": PROTOCOL_VERSION, "attached": True, "policy": policy, "launch_reports": launch_reports})


def encode_detached() -> str:
    return json.dumps({"v": PROTOCOL_VERSION, "detached": True})


def encode_refused(reason: str) -> str:
    """The host will not serve this application's configuration (the plugin stops at start)."""
    return json.dumps({"v": PROTOCOL_VERSION, "refused": reason})


def encode_challenge(nonce: str, proof: str) -> str:
    """The host's answer to a hello: its nonce and its proof of the token (``spark_auth``)."""
    return json.dumps({"v": PROTOCOL_VERSION, "nonce": nonce, "proof": proof}, separators=(",", ":"))


def encode_hello_reply(ok: bool, error: str = "") -> str:
    return json.dumps({"v": PROTOCOL_VERSION, "ok": ok, "error": error})


# ---------------------------------------------------------------------------------------------
# Listener events (the plugin's BridgeListener), batched into rounds
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExecutorAdded:
    t: int
    executor: str
    host: str
    cores: int
    container: str = ""   # its YARN container id ("" off YARN)
    nm: str = ""          # its NodeManager's web address as YARN reports it ("" off YARN)
    memory_mb: int = 0    # its heap (the application's spark.executor.memory); 0: not reported


@dataclass(frozen=True, slots=True)
class ExecutorRemoved:
    t: int
    executor: str
    reason: str


@dataclass(frozen=True, slots=True)
class TaskStart:
    t: int
    task: int
    stage: int
    attempt: int
    index: int
    executor: str
    host: str
    speculative: bool


@dataclass(frozen=True, slots=True)
class TaskEnd:
    t: int
    task: int
    stage: int
    attempt: int
    index: int
    executor: str
    host: str
    speculative: bool
    duration_ms: int
    reason: str   # "Success", "TaskKilled", "ExceptionFailure", ...


@dataclass(frozen=True, slots=True)
class StageSpec:
    stage: int
    tasks: int
    parents: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class JobStart:
    t: int
    job: int
    stages: tuple[StageSpec, ...]
    props: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class JobEnd:
    t: int
    job: int
    ok: bool


LiveEvent = ExecutorAdded | ExecutorRemoved | TaskStart | TaskEnd | JobStart | JobEnd
# The listener events' kinds (their "e"), as the schema's event lists them.
_EVENTS = frozenset(ref["$ref"].rpartition("/")[2] for ref in _SCHEMA["$defs"]["event"]["oneOf"])


def _task_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"t": int(d["t"]), "task": int(d["task"]), "stage": int(d["stage"]),
            "attempt": int(d["attempt"]), "index": int(d["index"]), "executor": str(d["executor"]),
            "host": str(d["host"]), "speculative": bool(d["speculative"])}


def parse_event(d: Mapping[str, Any]) -> LiveEvent:
    """One listener event (``{"e": kind, "t": ms, ...}``) as a typed value."""
    try:
        kind = d["e"]
        if kind in _EVENTS:
            _known(d, kind)
        if kind == "executor_added":
            return ExecutorAdded(int(d["t"]), str(d["executor"]), str(d["host"]), int(d["cores"]),
                                 str(d.get("container", "")), str(d.get("nm", "")), int(d.get("memory_mb", 0)))
        if kind == "executor_removed":
            return ExecutorRemoved(int(d["t"]), str(d["executor"]), str(d["reason"]))
        if kind == "task_start":
            return TaskStart(**_task_fields(d))
        if kind == "task_end":
            return TaskEnd(**_task_fields(d), duration_ms=int(d["duration_ms"]), reason=str(d["reason"]))
        if kind == "job_start":
            stages = tuple(StageSpec(int(s["stage"]), int(s["tasks"]), tuple(int(p) for p in s["parents"]))
                           for s in map(_known, d["stages"], repeat("job_stage")))
            return JobStart(int(d["t"]), int(d["job"]), stages,
                            {str(k): str(v) for k, v in d.get("props", {}).items()})
        if kind == "job_end":
            return JobEnd(int(d["t"]), int(d["job"]), bool(d["ok"]))
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise ProtocolError(f"malformed event {d!r}: {e!r}") from None
    raise ProtocolError(f"unknown event kind {kind!r}")
