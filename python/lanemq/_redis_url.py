"""Redis URLs without I/O: the reason one cannot be used, in words (the Redis client's own
errors only name a category such as ``InvalidClientConfig``), and the URL with its password
replaced by ``***`` for every message that shows it. Used by `RedisJobQueue` (so every way of
making a Redis queue refuses a bad URL alike) and by `from_url` and the CLI."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, parse_qs, urlsplit

TCP_SCHEMES = ("redis", "rediss", "valkey", "valkeys")
UNIX_SCHEMES = ("unix", "redis+unix", "valkey+unix")
# A Redis Cluster: ``redis+cluster://[[user]:password@]host:port[,host:port...][/][?...]``, the
# seed nodes the slot map is read from (README "Redis Cluster").
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster", "valkey+cluster", "valkeys+cluster")
# Redis Sentinel: ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master>
# [/<db>][?sentinel_username=U&sentinel_password=P]`` (README "Redis Sentinel").
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel", "valkey+sentinel", "valkeys+sentinel")

# A password in a query (``unix:///s.sock?pass=...``, a sentinel URL's ``sentinel_password=``).
_QUERY_SECRET = re.compile(r"([?&](?:pass|[a-z_]*password|[a-z_]*_pass)=)[^&#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: the one in the user part (everything up
    to the last ``@`` after ``scheme://``, so a password holding ``@`` or ``/`` is covered too)
    and ``pass=`` / ``password=`` / ``sentinel_password=`` query values. Never fails, whatever
    the string."""
    scheme, slashes, rest = url.partition("://")
    if slashes and "@" in rest:
        user_part, host_part = rest.rsplit("@", 1)
        if ":" in user_part:
            user_part = user_part.split(":", 1)[0] + ":***"
        url = f"{scheme}://{user_part}@{host_part}"
    return _QUERY_SECRET.sub(r"\1***", url)


#: Every scheme a Redis queue's URL may have.
REDIS_SCHEMES = TCP_SCHEMES + UNIX_SCHEMES + CLUSTER_SCHEMES + SENTINEL_SCHEMES


def foreign_scheme(url: str) -> str | None:
    """The scheme of ``scheme://...`` when it is not a Redis one (``http``, say: the URL of
    another kind of server, which no Redis connection can be made to), else None."""
    scheme, slashes, _ = url.partition("://")
    if not slashes or scheme.lower() in REDIS_SCHEMES:
        return None
    return scheme


def redis_url_problem(url: str) -> str | None:
    """What is wrong with the URL as the Redis client would read it, in words (its own
    errors only name a category), or None."""
    scheme = url.partition(":")[0].lower()
    if "://" not in url and scheme not in REDIS_SCHEMES:
        # ("127.0.0.1:6379" would read as a URL of scheme "127.0.0.1", without a host)
        return "missing scheme (redis://...)"
    if scheme in CLUSTER_SCHEMES:
        return _cluster_problem(url)
    if scheme in SENTINEL_SCHEMES:
        return _sentinel_problem(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad port, or brackets that do not close
        # (not urllib's words: with an unencoded "/" in a password they may quote part of it)
        return "malformed host or port"
    if scheme in UNIX_SCHEMES:
        if parts.netloc not in ("", "localhost") or not parts.path:
            return "expected unix:///path/to/redis.sock"
        return _db_problem(_query(parts).get("db", "0"), "?db=")
    if not parts.hostname:
        return "no host"
    if parts.hostname in ("0.0.0.0", "::"):
        return f"{parts.hostname} is a wildcard address, not a server's"
    if port == 0:
        return "invalid port 0"
    return _db_problem(parts.path.strip("/") or "0", "the path")


def _query(parts: SplitResult) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(parts.query).items()}


def _db_problem(db: str, where: str) -> str | None:
    # (the value is not quoted: with an unencoded "/" in a password it may hold part of it)
    return None if db.isdigit() else f"the database number ({where}) is not a number"


def _hosts_and_path(url: str) -> tuple[list[str], str]:
    """The comma-separated hosts of a multi-host URL (credentials dropped) and its path."""
    rest = url.partition("://")[2]
    before_query = rest.partition("?")[0].partition("#")[0]
    _, at, hosts_path = before_query.rpartition("@")
    hosts, _, path = (hosts_path if at else before_query).partition("/")
    return [host for host in hosts.split(",") if host], path


def _hosts_problem(hosts: list[str], each: str, none: str) -> str | None:
    """``none`` without hosts, else what is wrong with the first of them that is not a TCP
    URL's host and port (``each``: what a host is called in the message)."""
    if not hosts:
        return none
    for host in hosts:
        problem = redis_url_problem(f"redis://{host}")
        if problem:
            return f"{each} {host!r}: {problem}"
    return None


def _cluster_problem(url: str) -> str | None:
    """What is wrong with a cluster URL: each seed as a TCP URL's host and port; database 0
    only (a cluster has no other)."""
    seeds, path = _hosts_and_path(url)
    if path not in ("", "0"):
        return "a cluster has database 0 only (no other database in the path)"
    return _hosts_problem(seeds, "seed", "no seed node (host:port)")


def _sentinel_problem(url: str) -> str | None:
    """What is wrong with a sentinel URL: each sentinel as a TCP URL's host and port, a master
    name, a database number if one follows it."""
    sentinels, path = _hosts_and_path(url)
    name, _, db = path.partition("/")
    problem = _hosts_problem(sentinels, "sentinel", "no sentinel (host:port)")
    if problem:
        return problem
    if not name:
        return "no master name (redis+sentinel://host:port/<master name>)"
    db = db.rstrip("/")
    if db and not db.isdigit():
        return "the database number (after the master name) is not a number"
    return None
