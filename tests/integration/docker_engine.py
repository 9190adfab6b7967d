"""A Docker engine, a Compose and the schedbridge image for tests/integration/test_compose_cluster.py.

Found where they are; otherwise, as root, installed from Debian (`docker.io`, `docker-compose`,
`debootstrap`) and started (`dockerd --storage-driver=vfs`, which needs no kernel overlay support
inside a container; stopped again by its recorded pid, as nothing else is). Where neither works,
the reason is returned for the test to skip with.

The image is built once per content (:func:`build`): tagged `schedbridge:<hash>` by a SHA-256 of
every file of its build context (docker/Dockerfile.dockerignore honoured, :func:`context_files`)
and of its base image, with docker/docker-compose.yml's `schedbridge:dev` pointing at it; when
that tag exists, nothing is built and nothing pruned.

The client is Debian's /usr/bin/docker when present: its BuildKit is built in, while Docker 23 and
later build with BuildKit only through the buildx plugin, which a bare client (such as a static
/usr/local/bin/docker) lacks. Compose: the v2 plugin of that client if it has one, else Compose v1
(`docker-compose`); the test uses only what both support.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_CLIENT = Path("/usr/bin/docker")
IMAGE = "schedbridge:dev"  # docker/docker-compose.yml's image
GATEWAY_IMAGE = "schedbridge-gateway:dev"  # the Dockerfile's `gateway` stage
REPOSITORY = IMAGE.split(":")[0]  # content tags: schedbridge:<TAG_LENGTH hex digits of the context's hash>
TAG_LENGTH = 16
KEEP_IMAGES = 2  # content-tagged images kept: this build's and the newest other (a clone and a working tree)
DOCKERFILE = "docker/Dockerfile"  # relative to the build context, the repository root
UPSTREAM_BASE = "debian:bookworm-slim"
LOCAL_BASE = "schedbridge-base:bookworm"  # docker/base-image.sh's default tag
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # this host's trust, a TLS proxy's CA included
CACHE_KEEP = "12GB"  # BuildKit cache kept between runs (BuildKit's count: layers' diffs) but on vfs (below)
PRUNE_MARGIN_S = 300
GB = 2**30
# Left free beside the compose cluster for the local testbed, which shares the disk: its NodeManagers
# turn UNHEALTHY below 1 GB free (bridge/testbed/templates/yarn-site.xml), and its applications
# then wait for containers. What HDFS blocks and Spark's local files need on top is in the rest.
TESTBED_RESERVE = 5 * GB
MIRROR_ARGS = ("APT_MIRROR", "PIP_INDEX_URL", "MAVEN_MIRROR_URL")  # passed on to the build when set


class Unavailable(Exception):
    """No engine here and none can be started: the plain reason to skip with."""


@dataclass
class Engine:
    docker: str
    compose: list[str]
    dockerd: subprocess.Popen[bytes] | None = None  # the daemon this test started, if any
    log: Path | None = None
    notes: list[str] = field(default_factory=list)

    def run(self, *args: str, timeout: float = 120, check: bool = True,
            env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """A docker client command; on failure an AssertionError with its output's end."""
        return run([self.docker, *args], timeout=timeout, check=check, env=env, stdin=stdin)

    def stop(self) -> None:
        """Stop the daemon this test started (by its pid), nothing else."""
        if self.dockerd is not None and self.dockerd.poll() is None:
            self.dockerd.terminate()
            try:
                self.dockerd.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.dockerd.kill()
                self.dockerd.wait()


def run(argv: list[str], timeout: float = 120, check: bool = True, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin,
                          env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def engine(work: Path) -> Engine:
    """A client and Compose talking to a running daemon, installing and starting what is missing.
    As root, Debian's client is installed even beside another one, for its built-in BuildKit."""
    if not DEBIAN_CLIENT.is_file() and os.geteuid() == 0:
        _apt_install("docker.io", "docker-compose")
    client = _client()
    if not client:
        raise Unavailable("no Docker client, and not root to install Debian's docker.io")
    found = Engine(client, [])
    if not _answers(client):
        _start_daemon(found, work)
    found.compose = _compose(client)
    return found


def _client() -> str | None:
    return str(DEBIAN_CLIENT) if DEBIAN_CLIENT.is_file() else shutil.which("docker")


def _answers(client: str) -> bool:
    return run([client, "info", "--format", "{{.ServerVersion}}"], timeout=30, check=False).returncode == 0


def _start_daemon(found: Engine, work: Path) -> None:
    if os.geteuid() != 0:
        raise Unavailable("no Docker daemon answers, and not root to start one")
    dockerd = shutil.which("dockerd")
    if not dockerd:
        _apt_install("docker.io")
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    found.log = work / "dockerd.log"
    with found.log.open("wb") as log:
        found.dockerd = subprocess.Popen([dockerd, "--storage-driver=vfs"], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while not _answers(found.docker):
        if found.dockerd.poll() is not None or time.monotonic() > deadline:
            found.stop()
            raise Unavailable(f"dockerd did not start: {found.log.read_text()[-1500:]}")
        time.sleep(1)
    found.notes.append(f"started dockerd (pid {found.dockerd.pid}, vfs)")


def _compose(client: str) -> list[str]:
    if run([client, "compose", "version"], timeout=30, check=False).returncode == 0:
        return [client, "compose"]
    if not shutil.which("docker-compose") and os.geteuid() == 0:
        _apt_install("docker-compose")
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise Unavailable("neither `docker compose` (v2) nor `docker-compose` (v1) is installed")


def _apt_install(*packages: str) -> None:
    """Debian's packages (root only); Unavailable with apt's last words if that fails."""
    for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *packages]):
        done = run(argv, timeout=900, check=False, env={"DEBIAN_FRONTEND": "noninteractive"})
        if done.returncode != 0:
            raise Unavailable(f"`{' '.join(argv)}` failed: {done.stderr[-800:]}")


def base_image(found: Engine) -> str:
    """debian:bookworm-slim if it is here or can be pulled, else docker/base-image.sh's local stand-in."""
    for image in (UPSTREAM_BASE, LOCAL_BASE):
        if found.run("image", "inspect", image, check=False).returncode == 0:
            return image
    if found.run("pull", UPSTREAM_BASE, timeout=600, check=False).returncode == 0:
        return UPSTREAM_BASE
    if not shutil.which("debootstrap"):
        _apt_install("debootstrap")
    run(["sh", str(ROOT / "docker" / "base-image.sh"), LOCAL_BASE], timeout=900, env={"DOCKER": found.docker})
    found.notes.append(f"{UPSTREAM_BASE} cannot be pulled: built {LOCAL_BASE} with docker/base-image.sh")
    return LOCAL_BASE


def _ignore_patterns(root: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """The build's ignore file as (exclusion, regex) in file order: BuildKit reads
    `<Dockerfile>.dockerignore` beside the Dockerfile, else `.dockerignore` at the context's root."""
    for candidate in (root / f"{DOCKERFILE}.dockerignore", root / ".dockerignore"):
        if candidate.is_file():
            lines = candidate.read_text().splitlines()
            break
    else:
        return []
    patterns = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exclusion = line.startswith("!")
        text = os.path.normpath(line[1:].strip() if exclusion else line).lstrip("/")
        patterns.append((exclusion, re.compile(_pattern_regex(text))))
    return patterns


def _pattern_regex(pattern: str) -> str:
    """A .dockerignore pattern as Docker's matcher reads it (Go's filepath.Match, plus `**` for
    any number of directories), as an anchored regex over a /-separated relative path."""
    out, i = "^", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*" and pattern[i + 1:i + 2] == "*":
            i += 2
            if pattern[i:i + 1] == "/":
                i += 1
            out += ".*" if i == len(pattern) else "(.*/)?"
            continue
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out += re.escape(ch)
            else:
                body = pattern[i + 1:end]
                out += "[" + ("^" + body[1:] if body.startswith("^") else body) + "]"
                i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(ch)
        i += 1
    return out + "$"


def _ignored(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether the context leaves `path` out: the last pattern matching it or one of its parent
    directories decides (a `!` pattern lets it back in)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    ignored = False
    for exclusion, regex in patterns:
        if any(regex.match(prefix) for prefix in prefixes):
            ignored = not exclusion
    return ignored


def context_files(root: Path = ROOT) -> list[str]:
    """Every file and symlink the build context sends (relative, /-separated, sorted): the
    tree under `root` less what the ignore file leaves out. Ignored directories are not entered
    unless a `!` pattern could let something inside them back in."""
    patterns = _ignore_patterns(root)
    prune = not any(exclusion for exclusion, _ in patterns)
    found = []
    for directory, dirs, files in os.walk(root):
        rel = Path(directory).relative_to(root).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        for name in list(dirs):
            if (Path(directory) / name).is_symlink():
                dirs.remove(name)
                files.append(name)
            elif prune and _ignored(prefix + name, patterns):
                dirs.remove(name)
        found += [prefix + name for name in files if not _ignored(prefix + name, patterns)]
    return sorted(found)


def context_hash(root: Path, base: str, base_id: str) -> str:
    """SHA-256 over what the image is made of: the build context's files (path, permission bits,
    content or link target), the Dockerfile, and the base image (name and id). Mirrors and the
    CA bundle are left out: they change where packages come from, not which."""
    digest = hashlib.sha256()
    digest.update(f"BASE_IMAGE={base}\0{base_id}\0".encode())
    for rel in [*context_files(root), DOCKERFILE]:
        path = root / rel
        try:
            info = path.lstat()
            content = os.readlink(path).encode() if stat.S_ISLNK(info.st_mode) else \
                hashlib.sha256(path.read_bytes()).digest()
        except FileNotFoundError:
            continue  # removed since the walk (another process's scratch file): gone from the context too
        digest.update(f"{rel}\0{stat.S_IMODE(info.st_mode):o}\0".encode() + content + b"\0")
    return digest.hexdigest()


def _image_id(found: Engine, image: str) -> str:
    return found.run("image", "inspect", "--format", "{{.Id}}", image, check=False).stdout.strip()


def _drop_if_unnamed(found: Engine, image_id: str) -> None:
    """Remove an image `schedbridge:dev` no longer names if no other tag does (one a container
    still uses stays)."""
    if not image_id or image_id == _image_id(found, IMAGE):
        return
    tags = found.run("image", "inspect", "--format", "{{join .RepoTags \" \"}}", image_id, check=False).stdout.split()
    if not tags:
        found.run("image", "rm", image_id, check=False)


def build(found: Engine, base: str, root: Path = ROOT) -> str:
    """The image of `root`, built once per content: tagged `schedbridge:<hash>` (:func:`context_hash`)
    and `schedbridge:dev`. When that tag exists already it is only tagged `schedbridge:dev` again:
    no build, no prune. Otherwise built as docker/README.md says, with this host's CA bundle and
    mirrors; then all but the KEEP_IMAGES newest content-tagged images are removed, and the image
    `schedbridge:dev` named before if nothing names it now (an image a container still uses
    stays), and the build cache is bounded, so repeated runs do not fill the disk. Returns the
    content tag."""
    started, wall = time.monotonic(), time.time()
    digest = context_hash(root, base, _image_id(found, base))
    tag = f"{REPOSITORY}:{digest[:TAG_LENGTH]}"
    before = _image_id(found, IMAGE)
    if _image_id(found, tag):
        found.run("tag", tag, IMAGE)
        _drop_if_unnamed(found, before)
        found.notes.append(f"image {tag} present: not built ({time.monotonic() - started:.1f} s)")
        return tag
    _build(found, base, root, "--tag", tag, "--tag", IMAGE, "--label", f"io.schedbridge.context-sha256={digest}")
    found.notes.append(f"built {tag} in {time.monotonic() - started:.0f} s")
    listed = found.run("image", "ls", "--format", "{{.Repository}}:{{.Tag}}", REPOSITORY).stdout.split()  # newest first
    content_tag = re.compile(rf"{REPOSITORY}:[0-9a-f]{{{TAG_LENGTH}}}")
    for old in [name for name in listed if name != tag and content_tag.fullmatch(name)][KEEP_IMAGES - 1:]:
        found.run("image", "rm", old, check=False)  # in use by a container: left alone
    _drop_if_unnamed(found, before)
    _prune(found, since=wall)
    return tag


def build_gateway(found: Engine, base: str, root: Path = ROOT) -> str:
    """The Dockerfile's `gateway` stage (Java and Python, nothing of the project), tagged
    GATEWAY_IMAGE. Its one layer is the runtime image's first, so after :func:`build` this is a
    cache hit."""
    _build(found, base, root, "--target", "gateway", "--tag", GATEWAY_IMAGE)
    return GATEWAY_IMAGE


def _build(found: Engine, base: str, root: Path, *args: str) -> None:
    """`docker build` of `root` as docker/README.md says, with this host's CA bundle and mirrors."""
    argv = ["build", "--file", str(root / DOCKERFILE), "--build-arg", f"BASE_IMAGE={base}", *args]
    if CA_BUNDLE.is_file():
        argv += ["--secret", f"id=ca-bundle,src={CA_BUNDLE}"]
    argv += [f"--build-arg={name}={os.environ[name]}" for name in MIRROR_ARGS if os.environ.get(name)]
    run([found.docker, *argv, str(root)], timeout=2400, env={"DOCKER_BUILDKIT": "1"})


def _prune(found: Engine, since: float) -> None:
    """Bound the build cache. BuildKit counts a layer by its diff, but vfs stores every layer as a
    full copy of the tree (2.2 GB here, however small the step): after a source change its 12 GB
    of diffs were ~50 GB on disk. So on vfs the layers this build did not use are dropped (the
    cache mounts stay: pip's and Maven's downloads); elsewhere the least recently used go until
    CACHE_KEEP is left."""
    if found.run("info", "--format", "{{.Driver}}").stdout.strip() == "vfs":
        # BuildKit checks each record's age as it gets to it, and deleting full copies takes
        # minutes (127 s for ~40 GB here): without a margin the newest build's layers aged out
        # of the window during the prune itself. So layers used within PRUNE_MARGIN_S before this
        # build's start stay too.
        unused = f"{int(time.time() - since) + PRUNE_MARGIN_S}s"
        found.run("builder", "prune", "--force", "--filter", "type=regular", "--filter", f"until={unused}",
                  timeout=1200)
    else:
        found.run("builder", "prune", "--force", "--keep-storage", CACHE_KEEP, timeout=600)


def require_disk(found: Engine, image: str, containers: int) -> None:
    """Refuse to start `containers` containers of `image` when the disk cannot hold them with
    TESTBED_RESERVE to spare: on vfs each container is a full copy of its image. Run out, the
    clusters beside and inside would stall for want of healthy NodeManagers, not fail."""
    driver, root = found.run("info", "--format", "{{.Driver}}\t{{.DockerRootDir}}").stdout.strip().split("\t")
    if driver != "vfs":
        return
    size = int(found.run("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())
    free = shutil.disk_usage(root).free
    need = containers * size + TESTBED_RESERVE
    if free < need:
        raise AssertionError(
            f"{free / GB:.1f} GB free on the disk of {root}: {containers} containers of {image} on vfs "
            f"(each a full copy, {size / GB:.1f} GB) and {TESTBED_RESERVE / GB:.0f} GB left for the local "
            f"testbed need {need / GB:.1f} GB. Free disk space (old checkouts, `docker image ls "
            f"{REPOSITORY}`) and run again.")


def privileged_refused(found: Engine, base: str) -> bool:
    """Whether this daemon refuses --privileged (a daemon without some capability, such as
    CAP_SYS_RESOURCE, fails to grant them all); tried on the small base image."""
    done = found.run("run", "--rm", "--privileged", base, "true", check=False, timeout=120)
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        found.notes.append(f"--privileged refused ({reason}): docker-compose.unprivileged.yml")
    return done.returncode != 0
