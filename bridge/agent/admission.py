"""Which connections the agent keeps open under a flood, so that a token holder is still served.

One global cap let 300 half-open connections from one address crowd out the controller's resume.
So connections that have not yet authenticated a request ("pending") are bounded per peer address
and overall. A newcomer beyond a bound is never refused: it displaces the oldest pending connection
of its own address (or, past the overall bound, the oldest of all). A flood from one address thus
churns through its own few slots and never touches another address's connections, and even a
client on the flooding address is only delayed until it has sent its headers. Connections that
have authenticated a request leave the pending pool and are bounded separately, so floods never
count against them.
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

MAX_PENDING_PER_PEER = 16   # unauthenticated connections from one address
MAX_PENDING = 128           # unauthenticated connections in all
MAX_AUTHENTICATED = 256     # connections that carried an authenticated request
C = TypeVar("C", bound=Hashable)


class Admission(Generic[C]):
    """Bookkeeping of open connections (keys: the connections' tasks); one event loop calls it."""

    def __init__(self, per_peer: int = MAX_PENDING_PER_PEER, pending: int = MAX_PENDING,
                 authenticated: int = MAX_AUTHENTICATED) -> None:
        self.per_peer, self.max_pending, self.max_authenticated = per_peer, pending, authenticated
        self._pending: OrderedDict[C, str] = OrderedDict()  # oldest first
        self._peers: Counter[str] = Counter()
        self._authenticated: set[C] = set()

    def admit(self, connection: C, peer: str) -> C | None:
        """Keep ``connection`` from ``peer``; returns the pending connection it displaces, if any."""
        displaced = None
        if self._peers[peer] >= self.per_peer:
            displaced = next(c for c, p in self._pending.items() if p == peer)
        elif len(self._pending) >= self.max_pending:
            displaced = next(iter(self._pending))
        if displaced is not None:
            self.leave(displaced)
        self._pending[connection] = peer
        self._peers[peer] += 1
        return displaced

    def authenticated(self, connection: C) -> bool:
        """``connection`` carried an authenticated request; whether it may stay open for more."""
        if connection in self._pending:
            self._forget_peer(self._pending.pop(connection))
            if len(self._authenticated) >= self.max_authenticated:
                return False
            self._authenticated.add(connection)
        return connection in self._authenticated

    def leave(self, connection: C) -> None:
        if connection in self._pending:
            self._forget_peer(self._pending.pop(connection))
        self._authenticated.discard(connection)

    def _forget_peer(self, peer: str) -> None:
        self._peers[peer] -= 1
        if self._peers[peer] <= 0:
            del self._peers[peer]
