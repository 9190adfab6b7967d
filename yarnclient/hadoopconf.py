"""Read a Hadoop configuration directory (HADOOP_CONF_DIR) the way Hadoop's `Configuration` does.

Only what a client needs to find the daemons' web addresses, but read by Hadoop's rules, so that
a directory copied from a real cluster means here what it means to `yarn` and `hdfs`:

- resources load in Hadoop's order: the built-in defaults of each file (the few keys of
  `core-default.xml`, `hdfs-default.xml`, `yarn-default.xml` read here), then `core-site.xml`,
  then `hdfs-site.xml` (HDFS addresses) or `yarn-site.xml` (YARN addresses); a later resource
  overrides an earlier one, except where the earlier one marked the property `<final>true</final>`;
- a property with no value (or an empty `<value></value>`) is ignored, as Hadoop ignores it;
- `${name}` in a value is expanded when read: `${env.NAME}` (also `${env.NAME:-default}` and
  `${env.NAME-default}`) from the environment; otherwise the Java system properties a client has
  (`user.name`, `user.home`) and then the other properties. An unbound name is left as written,
  a self-reference stops expansion, and a value needing 20 substitutions is an error, all as in
  Hadoop.

Not handled: XInclude, deprecated key names, HDFS NameNode HA (nameservices).
"""
from __future__ import annotations

import getpass
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from yarnclient.errors import YarnError

# The keys read here, with the defaults Hadoop 3.5.0's *-default.xml give them.
CORE_DEFAULTS = {"fs.defaultFS": "file:///"}
HDFS_DEFAULTS = {
    "dfs.http.policy": "HTTP_ONLY",
    "dfs.namenode.http-address": "0.0.0.0:9870",
    "dfs.namenode.https-address": "0.0.0.0:9871",
}
YARN_DEFAULTS = {
    "yarn.http.policy": "HTTP_ONLY",
    "yarn.resourcemanager.hostname": "0.0.0.0",
    "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:8088",
    "yarn.resourcemanager.webapp.https.address": "${yarn.resourcemanager.hostname}:8090",
    "yarn.resourcemanager.ha.enabled": "false",
    "yarn.nodemanager.hostname": "0.0.0.0",
    "yarn.nodemanager.webapp.address": "${yarn.nodemanager.hostname}:8042",
    "yarn.nodemanager.webapp.https.address": "0.0.0.0:8044",
}
RM_WEBAPP_PORT, RM_WEBAPP_HTTPS_PORT = 8088, 8090
MAX_SUBSTITUTIONS = 20  # Hadoop's Configuration.MAX_SUBST
_VARIABLE = re.compile(r"\$\{([^}$\s]+)\}")  # Hadoop's: no '}', '$' or blank inside
_POLICIES = ("HTTP_ONLY", "HTTPS_ONLY", "HTTP_AND_HTTPS")
_WILDCARD = "0.0.0.0"


class HadoopConfError(YarnError):
    """A configuration directory is missing a file or a key, or holds malformed XML."""


@dataclass(frozen=True)
class Property:
    """One property as loaded: its raw value, the resource it came from, and whether it is final."""

    value: str
    source: str
    final: bool = False


class HadoopConf:
    """Properties of a stack of resources, with Hadoop's override, `final` and `${}` rules."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._props: dict[str, Property] = {}
        self._environ = os.environ if environ is None else environ
        self.files: list[Path] = []

    @classmethod
    def load(cls, conf_dir: Path, site: str, environ: Mapping[str, str] | None = None) -> HadoopConf:
        """core-site.xml then `site` ("hdfs-site.xml" or "yarn-site.xml"), each after its defaults.

        Hadoop skips a missing site file; here the one that must name the daemon is required (a
        directory without it is not that cluster's): yarn-site.xml for YARN, core-site.xml (its
        fs.defaultFS) for HDFS."""
        conf = cls(environ)
        defaults = {"hdfs-site.xml": HDFS_DEFAULTS, "yarn-site.xml": YARN_DEFAULTS}[site]
        yarn = site == "yarn-site.xml"
        conf.add_defaults(CORE_DEFAULTS, "core-default.xml")
        conf.add_file(conf_dir / "core-site.xml", optional=yarn)
        conf.add_defaults(defaults, site.replace("-site", "-default"))
        conf.add_file(conf_dir / site, optional=not yarn)
        return conf

    def add_defaults(self, defaults: Mapping[str, str], source: str) -> None:
        for name, value in defaults.items():
            self._set(name, Property(value, source))

    def add_file(self, path: Path, optional: bool = False) -> None:
        """Load one `*-site.xml`; later definitions override earlier ones unless those are final.
        A missing optional file is skipped, as Hadoop skips it."""
        if optional and not path.exists():
            return
        for name, value, final in read_properties(path):
            self._set(name, Property(value, path.name, final))
        self.files.append(path)

    def _set(self, name: str, prop: Property) -> None:
        old = self._props.get(name)
        if old is not None and old.final:
            return  # Hadoop keeps a final value and warns; its resource said so on purpose
        self._props[name] = prop

    def raw(self, name: str) -> str | None:
        prop = self._props.get(name)
        return None if prop is None else prop.value

    def source(self, name: str) -> str:
        """The resource a property's value came from (for error messages)."""
        prop = self._props.get(name)
        return prop.source if prop else "unset"

    def get(self, name: str, default: str | None = None) -> str | None:
        """The value with `${...}` expanded and surrounding blanks trimmed (Hadoop's getTrimmed)."""
        raw = self.raw(name)
        if raw is None:
            return default
        return expand(raw, self._lookup, where=f"{self.source(name)}: {name}").strip()

    def get_bool(self, name: str) -> bool:
        """Hadoop's getBoolean with a default of false: only "true" (any case) is true."""
        return (self.get(name) or "").lower() == "true"

    def _lookup(self, name: str) -> str | None:
        if name.startswith("env.") and len(name) > 4:
            return _env_lookup(name[4:], self._environ)
        system = system_properties().get(name)
        return system if system is not None else self.raw(name)


def system_properties() -> dict[str, str]:
    """The Java system properties a client's `${...}` commonly names (`hadoop.tmp.dir` uses user.name)."""
    return {"user.name": getpass.getuser(), "user.home": str(Path.home())}


def _env_lookup(spec: str, environ: Mapping[str, str]) -> str | None:
    """`NAME`, `NAME:-default` (default when unset or empty) or `NAME-default` (when unset)."""
    for i, char in enumerate(spec):
        if char == ":" and spec[i + 1:i + 2] == "-":
            value = environ.get(spec[:i])
            return value if value else spec[i + 2:]
        if char == "-":
            value = environ.get(spec[:i])
            return spec[i + 1:] if value is None else value
    return environ.get(spec)


def expand(value: str, lookup: Callable[[str], str | None], *, where: str) -> str:
    """Hadoop's substituteVars: replace the first `${name}` until none is left or one is unbound."""
    expression = value
    for _ in range(MAX_SUBSTITUTIONS):
        match = _VARIABLE.search(expression)
        if match is None:
            return expression
        found = lookup(match.group(1))
        if found is None:
            return expression  # unbound: left as written
        if match.group(0) in found:
            return value  # a loop: Hadoop returns the original expression
        expression = expression[:match.start()] + found + expression[match.end():]
    raise HadoopConfError(f"{where}: variable substitution depth too large "
                          f"({MAX_SUBSTITUTIONS} substitutions) in {value!r}")


def read_properties(path: Path) -> list[tuple[str, str, bool]]:
    """(name, value, final) of one `*-site.xml`, in file order; elements or attributes, as Hadoop
    accepts both. Properties without a name or a value are left out, as Hadoop leaves them out."""
    if not path.is_file():
        raise HadoopConfError(f"{path}: no such file (is HADOOP_CONF_DIR right?)")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        line, _ = exc.position
        raise HadoopConfError(f"{path}: line {line}: malformed XML ({exc})") from None
    except OSError as exc:
        raise HadoopConfError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if root.tag != "configuration":
        raise HadoopConfError(f"{path}: the top-level element is <{root.tag}>, not <configuration>")
    found = []
    for prop in root.iter("property"):
        name = prop.findtext("name", prop.get("name"))
        value = prop.findtext("value", prop.get("value"))
        final = prop.findtext("final", prop.get("final")) == "true"
        if name and name.strip() and value:
            found.append((name.strip(), value, final))
    return found


def read_site(path: Path) -> dict[str, str]:
    """The raw name → value pairs of one `*-site.xml` file (no defaults, no expansion)."""
    return {name: value for name, value, _ in read_properties(path)}


# --- addresses -------------------------------------------------------------------------------

def http_policy(conf: HadoopConf, key: str) -> str:
    """HTTP_ONLY, HTTPS_ONLY or HTTP_AND_HTTPS (any case, as Hadoop's HttpConfig.Policy reads it)."""
    policy = (conf.get(key) or "HTTP_ONLY").upper()
    if policy not in _POLICIES:
        raise HadoopConfError(f"{conf.source(key)}: {key} is {conf.get(key)!r}; "
                              f"expected one of {', '.join(_POLICIES)}")
    return policy


def yarn_uses_https(conf: HadoopConf) -> bool:
    """YarnConfiguration.useHttps: only HTTPS_ONLY switches the web endpoints to https."""
    return http_policy(conf, "yarn.http.policy") == "HTTPS_ONLY"


def rm_webapp_urls(conf_dir: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """The ResourceManagers' REST base URLs: one, or one per `yarn.resourcemanager.ha.rm-ids` entry
    (in that order) when HA is enabled. Which of them is active is asked of the RMs themselves."""
    conf = HadoopConf.load(conf_dir, "yarn-site.xml", environ)
    https = yarn_uses_https(conf)
    scheme, key = ("https", "yarn.resourcemanager.webapp.https.address") if https else \
        ("http", "yarn.resourcemanager.webapp.address")
    if not conf.get_bool("yarn.resourcemanager.ha.enabled"):
        return [f"{scheme}://{_address(conf, key, 'set yarn.resourcemanager.hostname or ' + key)}"]
    return [f"{scheme}://{address}" for address in _ha_addresses(conf, key, https)]


def _ha_addresses(conf: HadoopConf, key: str, https: bool) -> list[str]:
    """RMHAUtils.getRMHAWebappAddresses: `<key>.<id>`, else `yarn.resourcemanager.hostname.<id>`
    and the default port; an id with neither is an error here (Hadoop would skip it silently)."""
    ids = [i.strip() for i in (conf.get("yarn.resourcemanager.ha.rm-ids") or "").split(",") if i.strip()]
    if not ids:
        raise HadoopConfError(f"{conf.source('yarn.resourcemanager.ha.enabled')}: "
                              "yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids is empty")
    port = RM_WEBAPP_HTTPS_PORT if https else RM_WEBAPP_PORT
    addresses = []
    for rm_id in ids:
        address = conf.get(f"{key}.{rm_id}")
        if address is None and conf.get(f"yarn.resourcemanager.hostname.{rm_id}"):
            address = f"{conf.get(f'yarn.resourcemanager.hostname.{rm_id}')}:{port}"
        if not address:
            raise HadoopConfError(f"{conf.files[-1]}: ResourceManager {rm_id!r} (yarn.resourcemanager.ha.rm-ids) "
                                  f"has neither {key}.{rm_id} nor yarn.resourcemanager.hostname.{rm_id}")
        addresses.append(_checked(conf, f"{key}.{rm_id}", address))
    return addresses


def nodemanager_webapp_url(conf_dir: Path, http_address: str | None = None,
                           environ: Mapping[str, str] | None = None) -> str:
    """A NodeManager's REST base URL: https under `yarn.http.policy=HTTPS_ONLY`. `http_address` is
    the node's address as the RM reports it (`nodeHTTPAddress`, already the https one under
    HTTPS_ONLY); without it, this node's own `yarn.nodemanager.webapp(.https).address`, whose
    wildcard host means this host."""
    conf = HadoopConf.load(conf_dir, "yarn-site.xml", environ)
    https = yarn_uses_https(conf)
    scheme = "https" if https else "http"
    if http_address:
        return f"{scheme}://{http_address}"
    key = "yarn.nodemanager.webapp.https.address" if https else "yarn.nodemanager.webapp.address"
    host, _, port = (conf.get(key) or "").rpartition(":")
    return f"{scheme}://{'127.0.0.1' if host in ('', _WILDCARD) else host}:{port}"


def fs_default(conf_dir: Path, environ: Mapping[str, str] | None = None) -> str:
    """`fs.defaultFS`, which must be an hdfs:// URI for the jobs' inputs to live in HDFS."""
    conf = HadoopConf.load(conf_dir, "hdfs-site.xml", environ)
    value = conf.get("fs.defaultFS") or ""
    if not value.startswith("hdfs://"):
        raise HadoopConfError(f"{conf_dir / 'core-site.xml'}: fs.defaultFS is {value!r}, not an hdfs:// URI")
    return value


def webhdfs_url(conf_dir: Path, environ: Mapping[str, str] | None = None) -> str:
    """The NameNode's WebHDFS base URL from hdfs-site.xml; https under `dfs.http.policy=HTTPS_ONLY`.

    A wildcard (or default) host is replaced by fs.defaultFS's, as Hadoop's DFSUtil does."""
    conf = HadoopConf.load(conf_dir, "hdfs-site.xml", environ)
    https = http_policy(conf, "dfs.http.policy") == "HTTPS_ONLY"
    key = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    host, _, port = (conf.get(key) or "").rpartition(":")
    if host in ("", _WILDCARD):
        default_fs = urlsplit(conf.get("fs.defaultFS") or "")
        if default_fs.scheme != "hdfs" or not default_fs.hostname:
            raise HadoopConfError(f"{conf_dir}: {key} has no host and fs.defaultFS is not an "
                                  "hdfs:// URI to take it from")
        host = default_fs.hostname
    return f"{'https' if https else 'http'}://{host}:{port}"


def _address(conf: HadoopConf, key: str, hint: str) -> str:
    return _checked(conf, key, conf.get(key) or "", hint)


def _checked(conf: HadoopConf, key: str, address: str, hint: str = "") -> str:
    """host:port, refusing the wildcard host of the defaults: a client cannot connect to it."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or host == _WILDCARD or "${" in address:
        origin = " (Hadoop's default)" if conf.source(key).endswith("-default.xml") else ""
        fix = f"; {hint}" if hint else ""
        raise HadoopConfError(f"{conf.files[-1]}: {key} is {address!r}{origin}, "
                              f"not a host:port a client can reach{fix}")
    return address
