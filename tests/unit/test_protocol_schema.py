"""Every message of the plugin protocol, either side's, against its one schema (``sparkplugin.PROTOCOL_SCHEMA``).

The host's messages are built here by every ``encode_*`` of ``bridge.protocol.messages``; the plugin's are the ones its
own JUnit suite built with the plugin's code and wrote to ``sparkplugin/build/protocol-samples.jsonl``
(``ProtocolSchemaTest``, run by ``make test`` before pytest), plus those Python clients send in the plugin's
place (the handshake, the preflight attach, the benchmark's rounds). A field added or dropped on one side
only fails here or there; the host's parsers refuse a field the schema does not name.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import sparkplugin
from bridge.protocol import auth as spark_auth
from bridge.plugin.bench import synthetic_rounds
from bridge.protocol.messages import (MAX_MESSAGE_BYTES, PROTOCOL_VERSION, ContainerChange, Grant, Placement,
                                        Prediction, ProtocolError, decode, encode_attached, encode_challenge,
                                        encode_detached, encode_error, encode_hello_reply, encode_placement,
                                        encode_refused, encode_resync, parse_attach, parse_detach, parse_event,
                                        parse_round)

SCHEMA = json.loads(sparkplugin.PROTOCOL_SCHEMA.read_text())
SAMPLES = Path(sparkplugin.__file__).resolve().parent / "build" / "protocol-samples.jsonl"


def validator(part: str) -> Draft202012Validator:
    """The schema with ``$defs/part`` as its root (``host_message``, ``plugin_message``)."""
    root = {k: v for k, v in SCHEMA.items() if k != "oneOf"}
    return Draft202012Validator({**root, "$ref": f"#/$defs/{part}"})


HOST, PLUGIN, ANY = validator("host_message"), validator("plugin_message"), Draft202012Validator(SCHEMA)

HOST_MESSAGES = {
    "placement": encode_placement(Placement(grants=(Grant(3, 1, "2", 2), Grant(4, 0, "1")),
                                            preempt=(12, 40_000_000_000), spark_order=True, held=3), 41, 187),
    "placement (nothing)": encode_placement(Placement(), 1, 0),
    "placement (containers)": encode_placement(Placement(containers=(
        ContainerChange("3", "container_1_0001_01_000004", "suspend", True),
        ContainerChange("3", "container_1_0001_01_000004", "resume", False))), 2, 9),
    "placement (launches ahead)": encode_placement(Placement(grants=(Grant(2, 0, "1"),), next=(
        Prediction("1", 2, 0), Prediction("3", 5, 1)), withdraw=(17, 40_000_000_001), hits=2, misses=2), 5, 60),
    "error": encode_error("KeyError: 'x'"),
    "error of a round": encode_error("policy failed", 7),
    "resync": encode_resync(8),
    "attached": encode_attached("hawk"),
    "attached (launch reports)": encode_attached("kairos", launch_reports=True),
    "detached": encode_detached(),
    "refused": encode_refused("unknown policy 'fifoo'"),
    "challenge": encode_challenge("00112233445566778899aabbccddeeff", "ab" * 32),
    "hello accepted": encode_hello_reply(True),
    "hello refused": encode_hello_reply(False, "bad token"),
}


def test_schema_is_a_valid_draft_2020_12_schema_and_holds_the_version_and_the_bound() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$defs"]["version"]["const"] == PROTOCOL_VERSION == 2
    assert SCHEMA["x-max-message-bytes"] == MAX_MESSAGE_BYTES == 16 << 20


def test_every_object_of_the_schema_refuses_fields_it_does_not_name() -> None:
    for name, definition in SCHEMA["$defs"].items():
        if "properties" in definition:
            assert definition["additionalProperties"] is False, name


@pytest.mark.parametrize("name", HOST_MESSAGES)
def test_every_message_the_host_sends_is_a_host_message(name: str) -> None:
    HOST.validate(decode(HOST_MESSAGES[name]))
    assert not PLUGIN.is_valid(json.loads(HOST_MESSAGES[name]))


def plugin_samples() -> list[dict[str, Any]]:
    """The messages the plugin's own code built in its JUnit suite; their absence is a failure, not a skip."""
    if not SAMPLES.is_file():
        pytest.fail(f"{SAMPLES} is missing: the plugin's tests write it (`make plugin-test`, which `make test` "
                    "and `make unit` run before pytest)")
    return [json.loads(line) for line in SAMPLES.read_text().splitlines()]


def test_every_message_the_plugin_sent_in_its_tests_is_a_plugin_message() -> None:
    samples = plugin_samples()
    assert {m["kind"] for m in samples} == {"hello", "auth", "attach", "round", "detach"}
    for msg in samples:
        PLUGIN.validate(msg)
        ANY.validate(msg)


def test_the_hosts_parsers_read_every_message_the_plugin_sent() -> None:
    for msg in plugin_samples():
        if msg["kind"] == "round":
            rnd = parse_round(msg)
            snapshot = rnd.snapshot or {}
            for event in [*rnd.events, *(e for key in ("executors", "running", "jobs") for e in snapshot.get(key, ()))]:
                parse_event(event)
        elif msg["kind"] == "attach":
            assert parse_attach(msg)[1].params == {"cutoff": "0.5"}
        elif msg["kind"] == "detach":
            assert parse_detach(msg) == msg["app"]


class Recorder(io.BytesIO):
    """A connection to a host that answers the handshake (as a host that knows the token) and records it."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token, self.sent, self.replies = token, [], iter(())

    def write(self, data: Any) -> int:
        msg = json.loads(data)
        self.sent.append(msg)
        if msg["kind"] == "hello":
            mine = spark_auth.new_nonce()
            self.replies = iter([encode_challenge(mine, spark_auth.proof(self.token, "host", msg["nonce"], mine)),
                                 encode_hello_reply(True)])
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        return next(self.replies).encode() + b"\n"


def python_plugin_messages() -> Iterator[dict[str, Any]]:
    """What Python clients send in the plugin's place: the handshake, the preflight's attach, the bench's rounds."""
    f = Recorder("t" * 32)
    spark_auth.client_handshake(f, f.token, "preflight", spark_auth.new_nonce())
    yield from f.sent
    yield {"v": PROTOCOL_VERSION, "kind": "attach", "app": "preflight", "policy": "hawk", "params": {}}
    yield from (json.loads(r) for r in synthetic_rounds(executors=2, stages=2, pending=4))


@pytest.mark.parametrize("msg", list(python_plugin_messages()), ids=lambda m: str(m["kind"]))
def test_what_python_clients_send_for_the_plugin_is_a_plugin_message(msg: dict[str, Any]) -> None:
    PLUGIN.validate(msg)


def a_round() -> dict[str, Any]:
    return next(m for m in plugin_samples() if m["kind"] == "round" and m["events"])


@pytest.mark.parametrize("change", ["added", "dropped", "nested", "event"])
def test_a_field_added_or_dropped_on_one_side_only_fails_the_schema(change: str) -> None:
    msg = a_round()
    if change == "added":
        msg["priority"] = 1
    elif change == "dropped":
        del msg["launched"]
    elif change == "nested":
        msg["stages"][0]["priority"] = 1
    else:
        msg["events"][0]["priority"] = 1
    assert not PLUGIN.is_valid(msg)


@pytest.mark.parametrize("change", ["added", "dropped", "nested"])
def test_a_reply_field_added_or_dropped_on_one_side_only_fails_the_schema(change: str) -> None:
    reply = json.loads(encode_placement(Placement(grants=(Grant(1, 0, "1"),)), 3, 40))
    if change == "added":
        reply["priority"] = 1
    elif change == "dropped":
        del reply["spark_order"]
    else:
        reply["assign"][0]["priority"] = 1
    assert not HOST.is_valid(reply)


@pytest.mark.parametrize("where", ["round", "slots", "stages", "launched", "conf", "snapshot", "job_stage"])
def test_the_hosts_parsers_refuse_a_field_the_schema_does_not_name(where: str) -> None:
    msg = next(m for m in plugin_samples() if m["kind"] == "round" and "snapshot" in m)
    target = {"round": msg, "conf": msg["conf"], "snapshot": msg["snapshot"]}.get(where)
    if where == "job_stage":
        target = msg["snapshot"]["jobs"][0]["stages"][0]
    elif target is None:
        msg[where] = msg[where] or [{"stage": 1, "attempt": 0, "executor": "1", "tasks": []}]
        target = msg[where][0]
    target["priority"] = 1
    with pytest.raises(ProtocolError, match="priority"):
        rnd = parse_round(msg)
        for event in rnd.snapshot["jobs"] if rnd.snapshot else ():
            parse_event(event)


def test_the_attach_and_detach_parsers_refuse_a_field_the_schema_does_not_name() -> None:
    with pytest.raises(ProtocolError, match="priority"):
        parse_attach({"v": 2, "kind": "attach", "app": "a", "policy": "fifo", "params": {}, "priority": 1})
    with pytest.raises(ProtocolError, match="priority"):
        parse_detach({"v": 2, "kind": "detach", "app": "a", "priority": 1})


def test_launch_ahead_fields_are_optional_and_read_when_present() -> None:
    """A round's ``ahead`` and a launch's ``ahead`` default to False; present, they are read, as
    the plugin sends them (its samples have a round that launched ahead)."""
    sent = next(m for m in plugin_samples() if m.get("ahead"))
    rnd = parse_round(sent)
    assert rnd.ahead and [x.ahead for x in rnd.launched] == [False, True]
    msg = a_round()
    msg.pop("ahead", None)
    for x in msg["launched"]:
        x.pop("ahead", None)
    assert not parse_round(msg).ahead and not any(x.ahead for x in parse_round(msg).launched)
    msg["ahead"] = True
    msg["launched"] = [{"stage": 1, "attempt": 0, "executor": "1", "tasks": [5, 6], "ahead": True},
                       {"stage": 2, "attempt": 0, "executor": "1", "tasks": [7]}]
    PLUGIN.validate(msg)
    rnd = parse_round(msg)
    assert rnd.ahead and [(x.tasks, x.ahead) for x in rnd.launched] == [((5, 6), True), ((7,), False)]
    msg["ahead"] = "false"
    assert not PLUGIN.is_valid(msg)
    with pytest.raises(ProtocolError, match="true or false"):
        parse_round(msg)


def test_a_placement_sends_next_and_withdraw_only_when_there_are_some_and_never_its_accounting() -> None:
    bare = json.loads(encode_placement(Placement(hits=3, misses=1, held=2), 1, 0))
    assert not {"next", "withdraw", "hits", "misses", "held"} & bare.keys()
    reply = json.loads(HOST_MESSAGES["placement (launches ahead)"])
    assert reply["next"] == [{"executor": "1", "stage": 2, "attempt": 0}, {"executor": "3", "stage": 5, "attempt": 1}]
    assert reply["withdraw"] == [17, 40_000_000_001]
    reply["next"][0]["priority"] = 1
    assert not HOST.is_valid(reply)
