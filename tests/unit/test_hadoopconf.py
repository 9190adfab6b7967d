"""Hadoop configuration read as Hadoop reads it, and ResourceManager HA against fake RMs on 127.0.0.1."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from yarnclient import NodeManagerClient, ResourceManagerClient
from yarnclient.errors import YarnNoActiveResourceManager
from yarnclient.hadoopconf import (HadoopConf, HadoopConfError, fs_default, nodemanager_webapp_url,
                                   rm_webapp_urls, webhdfs_url)


def site(path: Path, props: dict[str, str], final: tuple[str, ...] = ()) -> None:
    body = "".join(f"<property><name>{k}</name><value>{v}</value>"
                   f"{'<final>true</final>' if k in final else ''}</property>\n" for k, v in props.items())
    path.write_text(f"<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n")


# --- ${...} expansion --------------------------------------------------------------------------

def test_variables_expand_from_other_properties_across_files_and_from_the_environment(tmp_path: Path) -> None:
    site(tmp_path / "core-site.xml", {"cluster.domain": "example.org"})
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.${cluster.domain}"})
    # the default webapp address is ${yarn.resourcemanager.hostname}:8088, as in yarn-default.xml
    assert rm_webapp_urls(tmp_path, environ={}) == ["http://rm.example.org:8088"]
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm.${cluster.domain}",
                                      "yarn.resourcemanager.webapp.address":
                                          "${yarn.resourcemanager.hostname}:${env.RM_PORT:-8088}"})
    assert rm_webapp_urls(tmp_path, environ={"RM_PORT": "18088"}) == ["http://rm.example.org:18088"]
    assert rm_webapp_urls(tmp_path, environ={"RM_PORT": ""}) == ["http://rm.example.org:8088"]


def test_environment_defaults_system_properties_and_unbound_names(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"a": "${env.UNSET-x}", "b": "${env.EMPTY-x}|${env.EMPTY:-y}",
                                      "c": "/tmp/hadoop-${user.name}", "d": "${no.such.key}/${a}"})
    conf = HadoopConf.load(tmp_path, "yarn-site.xml", environ={"EMPTY": ""})
    assert (conf.get("a"), conf.get("b")) == ("x", "|y")
    assert conf.get("c") not in (None, "/tmp/hadoop-${user.name}") and "$" not in (conf.get("c") or "")
    assert conf.get("d") == "${no.such.key}/${a}"  # Hadoop stops at the first unbound name


def test_an_unresolvable_address_names_the_key(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.webapp.address": "${rm.host}:8088"})
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: yarn.resourcemanager.webapp.address is "
                                              r"'\$\{rm.host\}:8088'"):
        rm_webapp_urls(tmp_path)


def test_self_reference_stops_and_deep_chains_are_an_error(tmp_path: Path) -> None:
    chain = {f"k{i}": f"${{k{i + 1}}}" for i in range(25)} | {"k25": "end"}
    site(tmp_path / "yarn-site.xml", {"loop": "x${loop}", **chain, "k19": "end"})
    conf = HadoopConf.load(tmp_path, "yarn-site.xml")
    assert conf.get("loop") == "x${loop}"
    assert conf.get("k0") == "end"  # 19 substitutions; Hadoop refuses the 20th (MAX_SUBST)
    site(tmp_path / "yarn-site.xml", chain)
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: k0: variable substitution depth too large"):
        HadoopConf.load(tmp_path, "yarn-site.xml").get("k0")


def test_no_resource_manager_address_is_a_clear_error(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {})
    with pytest.raises(HadoopConfError, match=r"'0.0.0.0:8088' \(Hadoop's default\).*set "
                                              r"yarn.resourcemanager.hostname"):
        rm_webapp_urls(tmp_path)


# --- final properties and load order -----------------------------------------------------------

def test_a_final_property_is_not_overridden_by_a_later_resource(tmp_path: Path) -> None:
    site(tmp_path / "core-site.xml", {"yarn.resourcemanager.hostname": "rm-final.example",
                                      "plain.key": "core"}, final=("yarn.resourcemanager.hostname",))
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.hostname": "other.example", "plain.key": "yarn"})
    conf = HadoopConf.load(tmp_path, "yarn-site.xml")
    assert conf.get("plain.key") == "yarn"  # not final: the later resource wins
    assert conf.get("yarn.resourcemanager.hostname") == "rm-final.example"
    assert conf.source("yarn.resourcemanager.hostname") == "core-site.xml"
    assert rm_webapp_urls(tmp_path) == ["http://rm-final.example:8088"]


def test_final_holds_within_one_file_and_attributes_and_empty_values_count_as_hadoop_does(tmp_path: Path) -> None:
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration>"
        "<property name='a' value='first' final='true'/>"
        "<property><name>a</name><value>second</value></property>"
        "<property><name>b</name><value>kept</value></property>"
        "<property><name>b</name><value></value></property>"
        "</configuration>")
    conf = HadoopConf.load(tmp_path, "yarn-site.xml")
    assert (conf.get("a"), conf.get("b")) == ("first", "kept")


def test_hdfs_addresses_follow_core_then_hdfs_site(tmp_path: Path) -> None:
    site(tmp_path / "core-site.xml", {"nn.host": "nn.example", "fs.defaultFS": "hdfs://${nn.host}:8020"})
    site(tmp_path / "hdfs-site.xml", {})
    assert fs_default(tmp_path) == "hdfs://nn.example:8020"
    assert webhdfs_url(tmp_path) == "http://nn.example:9870"  # the wildcard default takes the fs host
    site(tmp_path / "hdfs-site.xml", {"dfs.namenode.http-address": "${nn.host}:50070"})
    assert webhdfs_url(tmp_path) == "http://nn.example:50070"


def test_malformed_xml_and_a_wrong_root_name_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "yarn-site.xml").write_text("<configuration>\n<property>\n<name>a</nme>\n</configuration>\n")
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: line 3: malformed XML"):
        rm_webapp_urls(tmp_path)
    (tmp_path / "yarn-site.xml").write_text("<properties/>")
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: the top-level element is <properties>"):
        rm_webapp_urls(tmp_path)


# --- yarn.http.policy --------------------------------------------------------------------------

def test_https_only_selects_https_addresses_and_default_ports(tmp_path: Path) -> None:
    site(tmp_path / "yarn-site.xml", {"yarn.http.policy": "HTTPS_ONLY", "yarn.resourcemanager.hostname": "rm"})
    assert rm_webapp_urls(tmp_path) == ["https://rm:8090"]
    assert nodemanager_webapp_url(tmp_path) == "https://127.0.0.1:8044"
    assert nodemanager_webapp_url(tmp_path, "nm1:8044") == "https://nm1:8044"
    assert NodeManagerClient.from_conf_dir(tmp_path, "nm1:8044").url == "https://nm1:8044"
    site(tmp_path / "yarn-site.xml", {"yarn.http.policy": "HTTPS_ONLY",
                                      "yarn.resourcemanager.webapp.address": "rm:8088",
                                      "yarn.resourcemanager.webapp.https.address": "rm:9443"})
    assert rm_webapp_urls(tmp_path) == ["https://rm:9443"]
    site(tmp_path / "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm"})  # HTTP_ONLY by default
    assert rm_webapp_urls(tmp_path) == ["http://rm:8088"]
    assert nodemanager_webapp_url(tmp_path) == "http://127.0.0.1:8042"


def test_https_only_for_hdfs_and_a_bad_policy(tmp_path: Path) -> None:
    site(tmp_path / "core-site.xml", {"fs.defaultFS": "hdfs://nn:8020"})
    site(tmp_path / "hdfs-site.xml", {"dfs.http.policy": "HTTPS_ONLY"})
    assert webhdfs_url(tmp_path) == "https://nn:9871"
    site(tmp_path / "yarn-site.xml", {"yarn.http.policy": "HTTPS_PLEASE", "yarn.resourcemanager.hostname": "rm"})
    with pytest.raises(HadoopConfError, match=r"yarn-site.xml: yarn.http.policy is 'HTTPS_PLEASE'"):
        rm_webapp_urls(tmp_path)


# --- ResourceManager HA ------------------------------------------------------------------------

def test_ha_addresses_by_id_hostname_and_default_port(tmp_path: Path) -> None:
    ha = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
          "yarn.resourcemanager.webapp.address.rm1": "a.example:18088",
          "yarn.resourcemanager.hostname.rm2": "b.example"}
    site(tmp_path / "yarn-site.xml", ha)
    assert rm_webapp_urls(tmp_path) == ["http://a.example:18088", "http://b.example:8088"]
    site(tmp_path / "yarn-site.xml", {**ha, "yarn.http.policy": "HTTPS_ONLY"})  # rm1 has no https address
    with pytest.raises(HadoopConfError, match=r"'rm1'.*neither yarn.resourcemanager.webapp.https.address.rm1"):
        rm_webapp_urls(tmp_path)
    https = {**ha, "yarn.http.policy": "HTTPS_ONLY", "yarn.resourcemanager.hostname.rm1": "a.example"}
    site(tmp_path / "yarn-site.xml", https)
    assert rm_webapp_urls(tmp_path) == ["https://a.example:8090", "https://b.example:8090"]
    site(tmp_path / "yarn-site.xml", {**ha, "yarn.resourcemanager.ha.rm-ids": "rm1,rm3"})
    with pytest.raises(HadoopConfError, match=r"'rm3'.*neither yarn.resourcemanager.webapp.address.rm3 "
                                              r"nor yarn.resourcemanager.hostname.rm3"):
        rm_webapp_urls(tmp_path)


class FakeRM:
    """A ResourceManager's web endpoint as HA shows it: /ws/v1/cluster/info names its haState;
    a standby redirects every other call to `redirect_to` (as RMWebAppFilter does)."""

    def __init__(self, state: str) -> None:
        self.state, self.redirect_to, self.calls = state, "", 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.calls += 1
                path = self.path.split("?")[0]
                if path == "/ws/v1/cluster/info":
                    self._json({"clusterInfo": {"haState": fake.state, "id": fake.url}})
                elif fake.state != "ACTIVE":
                    self.send_response(307)
                    self.send_header("Location", fake.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._json({"clusterMetrics": {"totalVirtualCores": 8, "served_by": fake.url}})

            def _json(self, body: object) -> None:
                payload = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"http://{self.address}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def pair() -> Iterator[tuple[FakeRM, FakeRM]]:
    standby, active = FakeRM("STANDBY"), FakeRM("ACTIVE")
    standby.redirect_to = active.url
    yield standby, active
    standby.stop()
    active.stop()


def ha_conf(tmp_path: Path, *addresses: str) -> Path:
    ids = [f"rm{i}" for i in range(1, len(addresses) + 1)]
    site(tmp_path / "yarn-site.xml", {
        "yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": ",".join(ids),
        **{f"yarn.resourcemanager.webapp.address.{i}": a for i, a in zip(ids, addresses)}})
    return tmp_path


def test_ha_pair_resolves_to_the_active_rm(tmp_path: Path, pair: tuple[FakeRM, FakeRM]) -> None:
    standby, active = pair
    rm = ResourceManagerClient.from_conf_dir(ha_conf(tmp_path, standby.address, active.address), retries=0)
    assert rm.url == active.url  # the standby, listed first, said STANDBY
    assert rm.info()["haState"] == "ACTIVE"
    assert rm.metrics().vcores_total == 8
    assert standby.calls == 1  # only asked for its state; no call was sent to it


def test_ha_fails_over_when_the_active_rm_goes_away(tmp_path: Path, pair: tuple[FakeRM, FakeRM]) -> None:
    standby, active = pair
    rm = ResourceManagerClient.from_conf_dir(ha_conf(tmp_path, standby.address, active.address),
                                             retries=0, timeout=(2, 5))
    assert rm.info()["id"] == active.url
    active.stop()
    standby.state = "ACTIVE"  # the other RM took over
    assert rm.info()["id"] == standby.url and rm.url == standby.url


def test_no_active_rm_lists_every_rm_tried(tmp_path: Path, pair: tuple[FakeRM, FakeRM]) -> None:
    standby, active = pair
    active.state = "STANDBY"
    down = FakeRM("ACTIVE")
    down.stop()  # a port nothing listens on
    rm = ResourceManagerClient.from_conf_dir(ha_conf(tmp_path, down.address, standby.address, active.address),
                                             retries=0, timeout=(2, 5))
    with pytest.raises(YarnNoActiveResourceManager) as err:
        rm.info()
    message = str(err.value)
    assert "no active ResourceManager among 3 tried" in message
    assert f"{down.url} (not active: cannot reach" in message
    assert f"{standby.url} (STANDBY)" in message and f"{active.url} (STANDBY)" in message
