"""What the Spark plugin would refuse at application start, checked before anything is submitted.

``replay`` (and the commands built on it) call :func:`check` so that a misspelled policy or
parameter, a bad value or a daemon that does not answer stops the command at once, with the same
message the plugin gives, instead of after the cluster was asked for executors. The plugin's own
keys are checked as ``BridgeConf.java`` reads them (``sparkplugin.check_conf``); the policy and its
parameters as a policy host would at attach (``PolicyHost.attach``), by the daemon itself when the
endpoint names one.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import sparkplugin
from bridge.drivers.planners import make_planner
from bridge.protocol import endpoint as daemon_endpoint
from bridge.protocol.auth import DEFAULT_TOKEN_FILE, AuthError, client_handshake, new_nonce
from bridge.protocol.messages import PROTOCOL_VERSION

PREFIX = sparkplugin.CONF_PREFIX
ENDPOINT_FORMS = "'local' (a host beside the driver, the default), 'inprocess', tcp://host:port or tls://host:port"
DAEMON_TIMEOUT_S = 10.0


def check(policy: str, conf: Mapping[str, str]) -> None:
    """Raises ValueError naming the key, for any configuration the plugin would refuse at start."""
    sparkplugin.check_conf(conf)  # the plugin's own keys: values, old and unknown keys
    fallback = conf.get(PREFIX + "fallback", "false").strip().lower()
    asked = conf.get(PREFIX + "policy", policy)
    if asked != policy:
        raise ValueError(f"{PREFIX}policy={asked} contradicts --policy {policy}; give the policy once")
    params = sparkplugin.policy_params(conf)
    endpoint = conf.get(PREFIX + "endpoint", "local")
    if endpoint.startswith(("tcp:", "tls:")):
        _attach_to_daemon(endpoint, conf, policy, params, fallback == "true")
    elif endpoint not in ("local", "inprocess"):
        raise ValueError(f"{PREFIX}endpoint must be {ENDPOINT_FORMS}, got {endpoint!r}")
    else:
        make_planner(policy, params)  # ValueError naming the unknown policy, key or bad value


def _attach_to_daemon(endpoint: str, conf: Mapping[str, str], policy: str, params: Mapping[str, str],
                      fallback: bool) -> None:
    """Handshake and attach as the plugin does; a refusal or, without fallback, no answer is an error."""
    try:
        daemon_endpoint.address(endpoint)
    except ValueError:
        raise ValueError(f"{PREFIX}endpoint must be {ENDPOINT_FORMS}, got {endpoint!r}") from None
    ca = conf.get(PREFIX + "tls.ca")
    if ca and not endpoint.startswith("tls:"):
        raise ValueError(f"{PREFIX}tls.ca is set but {PREFIX}endpoint is {endpoint!r}: use tls://host:port for a "
                         "daemon serving TLS")
    try:
        token = conf.get(PREFIX + "token") or _token_file(conf).read_text().strip()
    except OSError as e:
        if fallback:
            return
        raise ValueError(f"no token for the policy daemon at {endpoint}: set {PREFIX}token or {PREFIX}token.file "
                         f"(default {DEFAULT_TOKEN_FILE}, written by schedbridge serve): {e}") from None
    try:
        with daemon_endpoint.connect(endpoint, DAEMON_TIMEOUT_S, Path(ca) if ca else None) as sock, \
                sock.makefile("rwb") as f:
            client_handshake(f, token, "preflight", new_nonce())
            f.write(json.dumps({"v": PROTOCOL_VERSION, "kind": "attach", "app": "preflight", "policy": policy,
                                "params": dict(params)}).encode() + b"\n")
            f.flush()
            reply = json.loads(f.readline() or b"{}")
    except AuthError as e:
        raise ValueError(f"the policy daemon at {endpoint}: {e}") from None
    except (OSError, ValueError) as e:
        if fallback:
            return
        raise ValueError(f"the policy daemon at {endpoint} does not answer ({e}); start it "
                         f"(schedbridge serve) or set {PREFIX}fallback=true") from None
    if "refused" in reply:
        raise ValueError(f"the policy daemon at {endpoint} refused this configuration: {reply['refused']}")


def _token_file(conf: Mapping[str, str]) -> Path:
    return Path(conf.get(PREFIX + "token.file", str(DEFAULT_TOKEN_FILE))).expanduser()
