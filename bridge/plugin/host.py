"""The policy host: answers the Spark plugin's offer rounds with a planner's placements.

Transport-free: ``handle`` takes one request string and returns the reply string, so the same
host serves a PySpark driver in-process (py4j callback), one application from a process beside
its driver and many applications as a daemon (TCP). Each connection attaches first with the
application's policy and parameters: a host built with a planner serves only that planner's
policy and settings and refuses any other (a configuration mistake stops the application); a
host built without one builds it from the first attach. It keeps every application's state,
asks for a snapshot when it has none (daemon restarted), turns planner exceptions into error
replies (the plugin then falls back to Spark for that round) and keeps a bounded log of its
decisions.

An application's state is keyed by its Spark id *and* its owner, the digest of the application key
its connections present (``bridge.protocol.auth``): Spark ids are predictable, so a client that
plays another application's id first only ever creates a state of its own, and the real
application is served as if it were alone. Logs and decisions name ``<spark id>@<owner prefix>``.

A daemon's connection is a :class:`Client`, whose caps bound what a token holder can make the
host keep: applications per key and per connection, and the size of a snapshot (a decoded
snapshot costs the host about ten times its bytes). A request over a cap gets an error reply that
names it (the plugin falls back to Spark for that round). Applications no request named for a
while are forgotten (``forget_idle``); one that comes back resends its snapshot.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.drivers.planners import RoundPlanner, make_planner
from bridge.drivers.spark.state import LiveCluster
from bridge.plugin.metrics import HostMetrics
from bridge.plugin.peer_text import peer_logger
from bridge.protocol.messages import (
    Grant,
    LiveEvent,
    OfferRound,
    Placement,
    PolicyRequest,
    ProtocolError,
    decode,
    encode_attached,
    encode_detached,
    encode_error,
    encode_placement,
    encode_refused,
    encode_resync,
    parse_attach,
    parse_detach,
    parse_event,
    parse_round,
)
from policies.framework.registry import RegistryError

log = peer_logger(__name__)
# One line per answered round: DEBUG, so a busy daemon's INFO log keeps to attaches, detaches and
# refusals; the host beside one driver turns it on for its own log (``local_host``).
placements = peer_logger(f"{__name__}.placements")


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One answered round, for logs, metrics and tests."""

    app: str
    round: int
    placement: Placement
    micros: int


def refusal(planner: RoundPlanner, request: PolicyRequest) -> str | None:
    """Why ``planner`` cannot serve ``request`` (None if it can): the first mistake, named."""
    if request.policy != planner.name:
        try:
            make_planner(request.policy, request.params)
        except ValueError as e:
            return str(e)
        return (f"this policy host serves {planner.name!r}; the application asked for {request.policy!r} "
                "(point spark.schedbridge.endpoint at a host serving it, or leave the endpoint unset "
                "to host the policy beside the driver)")
    try:
        wanted = planner.settings_for(request.params)
    except (ValueError, RegistryError) as e:
        return str(e)
    if wanted != planner.settings:
        return (f"this policy host runs {planner.name} with other parameters than the application asked for "
                f"({'; '.join(_differences(planner.settings, wanted))}): start a host with the application's "
                "(schedbridge serve --param KEY=VALUE), or drop them from its conf")
    return None


def _differences(host: Any, app: Any, where: str = "") -> list[str]:
    """``key: host X, application Y`` for each field where two settings values differ."""
    if dataclasses.is_dataclass(host) and type(host) is type(app):
        return [d for f in dataclasses.fields(host)
                for d in _differences(getattr(host, f.name), getattr(app, f.name), f.name)]
    if isinstance(host, tuple) and isinstance(app, tuple) and len(host) == len(app):
        return [d for h, a in zip(host, app) for d in _differences(h, a, where)]
    return [] if host == app else [f"{where or 'settings'}: host {host!r}, application {app!r}"]


def _grants(grants: Sequence[Grant]) -> str:
    """Grants as the host's log writes them: ``s<stage>.<attempt>-><executor>x<slots>``."""
    return " ".join(f"s{g.stage}.{g.attempt}->{g.executor}x{g.slots}" for g in grants)


def _params_text(params: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(params.items())) + "}" if params else "defaults"


class HeldSlots:
    """Slot-seconds each application's policy held free by its own rule while tasks waited: a
    round's ``Placement.held`` counts until the application's next round (its next offer)."""

    def __init__(self) -> None:
        self._apps: dict[str, tuple[float, int, int]] = {}  # app -> (slot-seconds, held now, since ms)

    def record(self, app: str, now_ms: int, held: int) -> None:
        total, last, since = self._apps.get(app, (0.0, 0, now_ms))
        self._apps[app] = (total + last * max(now_ms - since, 0) / 1000.0, held, now_ms)

    def total(self, app: str) -> float:
        """The slot-seconds up to ``app``'s last round."""
        return self._apps.get(app, (0.0, 0, 0))[0]

    def forget(self, app: str) -> None:
        self._apps.pop(app, None)


def scoped(app: str, owner: str) -> str:
    """The key of application ``app`` of ``owner`` (a key digest): the Spark id, then 64 bits of the
    digest, which a client cannot choose for itself without its owner's application key."""
    return f"{app}@{owner[:16]}"


@dataclass(eq=False)
class Client:
    """One daemon connection: its owner (application key digest), its caps and the applications it
    named (``scoped``)."""

    owner: str
    apps_per_key: int
    apps_per_connection: int
    snapshot_bytes: int
    apps: set[str] = field(default_factory=set)


class PolicyHost:
    """Serves offer rounds for any number of applications with one planner (thread-safe).

    Without a planner, the first application to attach chooses it (the host the plugin starts
    beside one driver); later attaches must ask for the same policy and settings."""

    def __init__(self, planner: RoundPlanner | None = None, history: int = 10_000,
                 make: Callable[[str, Mapping[str, str]], RoundPlanner] = make_planner,
                 metrics: HostMetrics | None = None) -> None:
        """``make`` builds the planner from the first attach (a host without ``planner``)."""
        self.planner = planner
        self._make = make
        self.cluster = LiveCluster()
        self.decisions: deque[DecisionRecord] = deque(maxlen=history)
        self._lock = threading.Lock()
        self._failing = False
        self._owners: dict[str, str] = {}  # application's key (``scoped``) -> the owner it belongs to
        self._by_owner: dict[str, set[str]] = {}  # owner -> its applications with a state
        self._named: dict[str, float] = {}  # application's key -> when a request last named it
        self.held = HeldSlots()
        self.metrics = metrics or HostMetrics()
        self.metrics.count_applications(lambda: len(self._named))

    def handle(self, text: str, client: Client | None = None) -> str:
        """One request in, one reply out; never raises, whatever the input.

        ``client`` is the daemon's connection: the application ids it names are its owner's
        (``scoped``) and its caps apply. None (in-process) is the driver's own caller, whose ids are
        used as they are."""
        received = time.perf_counter_ns()
        try:
            msg = decode(text)
            if msg.get("kind") == "attach":
                return self.attach(*parse_attach(msg))
            if msg.get("kind") == "detach":
                return self._detach(self._own(parse_detach(msg), client))
            rnd = parse_round(msg)
            events = [parse_event(e) for e in rnd.events]
        except ProtocolError as e:
            log.warning("schedbridge host: bad request: %s", e)
            return encode_error(str(e))
        rnd = dataclasses.replace(rnd, app=self._own(rnd.app, client))
        if client is not None and rnd.snapshot is not None and len(text) > client.snapshot_bytes:
            return self._over(rnd, f"a round with a snapshot of {len(text)} bytes, over the cap of "
                                   f"{client.snapshot_bytes} (schedbridge serve --max-snapshot-bytes raises it)")
        try:
            return self._round(rnd, events, client, received)
        except Exception as e:  # noqa: BLE001 - e.g. a malformed snapshot: this round only, never the host
            self.metrics.rounds.labels("refused").inc()
            log.warning("schedbridge host: %s round %d refused: %s: %s", rnd.app, rnd.round, type(e).__name__, e)
            return encode_error(f"malformed round: {type(e).__name__}: {e}", rnd.round)

    def _round(self, rnd: OfferRound, events: Sequence[LiveEvent], client: Client | None, received: int) -> str:
        with self._lock:
            if self.planner is None:
                return self._refused(rnd, "no policy yet: a connection must attach before its first round")
            if rnd.snapshot is not None:
                if rnd.request is not None and (why := refusal(self.planner, rnd.request)) is not None:
                    return self._refused(rnd, why)
                if client is not None and (why := self._capped(rnd.app, client)) is not None:
                    return self._over(rnd, why)
                state = self.cluster.reset(rnd.app, rnd.snapshot, rnd.request)
                if client is not None and rnd.app not in self._owners:  # before anything else may fail
                    self._owners[rnd.app] = client.owner
                    self._by_owner.setdefault(client.owner, set()).add(rnd.app)
                self._named[rnd.app] = time.monotonic()
                log.info("schedbridge host: %s state rebuilt from snapshot: %d executors, %d running "
                         "tasks, %d active jobs", rnd.app, len(state.executors), len(state.running),
                         len(state.jobs))
                self.planner.rebuild(state)
            elif rnd.app not in self.cluster:
                self.metrics.rounds.labels("resync").inc()
                return encode_resync(rnd.round)
            else:
                self._named[rnd.app] = time.monotonic()
            if client is not None:
                client.apps.add(rnd.app)
            self.cluster.apply(rnd.app, events)
            return self._plan(self.planner, rnd, events, received)

    def _capped(self, app: str, client: Client) -> str | None:
        """Why ``client`` may not add application ``app`` (None if it may, or has it already)."""
        if app in self._owners:
            return None
        if len(client.apps) >= client.apps_per_connection:  # those forgotten meanwhile no longer count:
            client.apps &= self._owners.keys()                # pruned only at the cap (O(1) per new app)
        if len(client.apps) >= client.apps_per_connection:
            return (f"a new application over the cap of {client.apps_per_connection} applications per "
                    "connection (schedbridge serve --max-apps-per-connection raises it)")
        if len(self._by_owner.get(client.owner, ())) >= client.apps_per_key:
            return (f"a new application over the cap of {client.apps_per_key} applications per application "
                    "key (schedbridge serve --max-apps-per-key raises it)")
        return None

    def _over(self, rnd: OfferRound, why: str) -> str:
        log.warning("schedbridge host: %s round %d refused: %s", rnd.app, rnd.round, why)
        return self._refused(rnd, why)

    def _refused(self, rnd: OfferRound, why: str) -> str:
        self.metrics.rounds.labels("refused").inc()
        return encode_error(why, rnd.round)

    def _plan(self, planner: RoundPlanner, rnd: OfferRound, events: Sequence[LiveEvent], received: int) -> str:
        """The policy's placement for ``rnd``, with the host's time since ``received`` (its request
        read, in ``perf_counter_ns``) for the plugin to tell it from the trip."""
        start = time.perf_counter_ns()
        try:
            placement = planner.plan(rnd, events, self.cluster)
        except Exception as e:  # noqa: BLE001 - any policy bug must only cost this round
            self.metrics.rounds.labels("policy_error").inc()
            if not self._failing:
                log.warning("schedbridge host: policy %s failed (%s: %s); the plugin falls back to "
                            "Spark for such rounds", planner.name, type(e).__name__, e)
            self._failing = True
            return encode_error(f"{type(e).__name__}: {e}", rnd.round)
        self._failing = False
        self.held.record(rnd.app, rnd.now_ms, placement.held)
        micros = (time.perf_counter_ns() - start) // 1000
        self._count(placement, micros)
        self.decisions.append(DecisionRecord(rnd.app, rnd.round, placement, micros))
        if (placement.grants or placement.preempt or placement.confirmed) \
                and placements.isEnabledFor(logging.DEBUG):  # formatting costs
            parts = [_grants(placement.grants), f"ahead {_grants(placement.confirmed)}" if placement.confirmed else "",
                     f"preempt {list(placement.preempt)}" if placement.preempt else ""]
            placements.debug("schedbridge host: %s round %d: %s", rnd.app, rnd.round, " ".join(p for p in parts if p))
        return encode_placement(placement, rnd.round, (time.perf_counter_ns() - received) // 1000)

    def _count(self, placement: Placement, micros: int) -> None:
        metrics = self.metrics
        metrics.rounds.labels("placed").inc()
        metrics.plan_seconds.observe(micros / 1e6)
        metrics.granted_slots.inc(sum(g.slots for g in placement.grants))
        metrics.preemptions.inc(len(placement.preempt))
        if placement.hits or placement.misses:  # a label lookup per round otherwise, for every plugin
            metrics.ahead.labels("hit").inc(placement.hits)
            metrics.ahead.labels("miss").inc(placement.misses)
            if placement.paused:
                metrics.ahead_pauses.inc()

    @staticmethod
    def _own(app: str, client: Client | None) -> str:
        """The key of ``client``'s application ``app`` (``scoped``)."""
        return app if client is None else scoped(app, client.owner)

    def _detach(self, app: str) -> str:
        """The application ended: its state goes (a daemon keeps only live applications)."""
        with self._lock:
            held = self.held.total(app)
            self._forget(app)
        self.metrics.detaches.inc()
        log.info("schedbridge host: %s detached; the policy's own rule held %.2f free slot-s while tasks "
                 "waited", app, held)
        return encode_detached()

    def forget_owner(self, owner: str) -> list[str]:
        """Drops every application of ``owner`` (its connections are gone); returns their keys."""
        with self._lock:
            apps = sorted(self._by_owner.get(owner, ()))
            for app in apps:
                self._forget(app)
        return apps

    def forget_idle(self, idle_s: float) -> list[str]:
        """Drops every application no request named for ``idle_s``; returns their keys."""
        cutoff = time.monotonic() - idle_s
        with self._lock:
            apps = [app for app, named in self._named.items() if named <= cutoff]
            for app in apps:
                self._forget(app)
        return apps

    def _forget(self, app: str) -> None:
        if (owner := self._owners.pop(app, None)) is not None:
            self._by_owner[owner].discard(app)
            if not self._by_owner[owner]:
                del self._by_owner[owner]
        self._named.pop(app, None)
        self.held.forget(app)
        self.cluster.forget(app)
        if self.planner is not None:
            self.planner.forget(app)

    def attach(self, app: str, request: PolicyRequest) -> str:
        """Accepts ``app``'s policy request (building the planner if this host has none) or refuses it."""
        with self._lock:
            if self.planner is None:
                try:
                    self.planner = self._make(request.policy, request.params)
                except ValueError as e:
                    return self._refuse(app, str(e))
            elif (why := refusal(self.planner, request)) is not None:
                return self._refuse(app, why)
            log.info("schedbridge host: %s attached: policy %s, parameters %s", app, self.planner.name,
                     _params_text(request.params))
            self.metrics.attaches.labels("accepted").inc()
            return encode_attached(self.planner.name, self.planner.launch_reports)

    def _refuse(self, app: str, why: str) -> str:
        self.metrics.attaches.labels("refused").inc()
        log.warning("schedbridge host: refused %s: %s", app, why)
        return encode_refused(why)
