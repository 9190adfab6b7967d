"""`schedbridge agent --app`: the agent sees only the named applications' containers."""
from __future__ import annotations

import pytest

from bridge.agent.errors import BadRequest
from bridge.agent.nodemanager import AppFilter, NmContainer

MINE = "container_1795323800024_0027_01_000002"
MINE_EPOCH = "container_e17_1795323800024_0027_01_000003"
OTHER = "container_1795323800024_0270_01_000002"


class ListingNm:
    def __init__(self, ids: list[str]) -> None:
        self.listing = {i: NmContainer(i, "RUNNING", "u", 1024, 1) for i in ids}

    def containers(self) -> list[NmContainer]:
        return list(self.listing.values())

    def container(self, container_id: str) -> NmContainer | None:
        return self.listing.get(container_id)


def test_only_the_named_applications_containers_are_visible() -> None:
    nm = AppFilter(ListingNm([MINE, MINE_EPOCH, OTHER]), ("application_1795323800024_0027",))
    assert [c.id for c in nm.containers()] == [MINE, MINE_EPOCH]
    assert nm.container(MINE) is not None and nm.container(OTHER) is None


def test_a_malformed_application_id_is_refused() -> None:
    with pytest.raises(BadRequest, match="not a YARN application id"):
        AppFilter(ListingNm([]), ("app_27",))
