"""Redis server statistics around a process run: taken in the runner (`StatsProbe`), read by
the report (`parse_commandstats`, `server_cpu`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from _support import Resp, text

from comparison.adapter import Adapter


def aggregate_slowlog(entries: Iterable[Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """SLOWLOG entries -> per command (EVALSHA and FCALL per script) calls, usec, usec/call."""
    table: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, list) or len(entry) < 4 or not isinstance(entry[3], list):
            continue
        duration, args = int(entry[2]), [text(a) for a in entry[3]]
        command = args[0].lower() if args else "?"
        if command in ("evalsha", "eval", "evalsha_ro") and len(args) > 1:
            sha = args[1] if command != "eval" else hashlib.sha1(args[1].encode()).hexdigest()
            command = f"{command} {names.get(sha, sha[:12])}"
        elif command in ("fcall", "fcall_ro") and len(args) > 1:
            command = f"{command} {args[1]}"
        slot = table.setdefault(command, {"command": command, "calls": 0, "usec": 0})
        slot["calls"] += 1
        slot["usec"] += duration
    out = sorted(table.values(), key=lambda e: e["usec"], reverse=True)
    for entry in out:
        entry["usec_per_call"] = entry["usec"] / entry["calls"]
    return out


class StatsProbe:
    """Server statistics around the timed part of a process run: CONFIG RESETSTAT and INFO cpu
    before, INFO commandstats and INFO cpu after; with ``slowlog``, every command logged and
    returned (the per-script breakdown)."""

    def __init__(self, spec: dict[str, Any], adapter: Adapter) -> None:
        self.stats = bool(spec.get("stats"))
        self.slowlog = bool(spec.get("slowlog"))
        wanted = self.stats or self.slowlog
        self.client = Resp(spec["host"], spec["port"]) if wanted else None
        self.script_names: dict[str, str] = {}
        if self.slowlog:
            self.script_names = adapter.script_names()

    def start(self) -> None:
        if self.client is None:
            return
        if self.slowlog:
            self.client.call("CONFIG", "SET", "slowlog-log-slower-than", 0)
            self.client.call("CONFIG", "SET", "slowlog-max-len", 1_000_000)
            self.client.call("SLOWLOG", "RESET")
        self.client.call("CONFIG", "RESETSTAT")
        self.cpu_before = text(self.client.call("INFO", "cpu"))

    def stop(self) -> dict[str, Any] | None:
        if self.client is None:
            return None
        out: dict[str, Any] = {
            "cpu_before": self.cpu_before,
            "cpu_after": text(self.client.call("INFO", "cpu")),
            "commandstats": text(self.client.call("INFO", "commandstats")),
        }
        if self.slowlog:
            entries = self.client.call("SLOWLOG", "GET", -1) or []
            self.client.call("CONFIG", "SET", "slowlog-log-slower-than", 10_000)
            self.client.call("CONFIG", "SET", "slowlog-max-len", 128)
            self.client.call("SLOWLOG", "RESET")
            out["slowlog_entries"] = len(entries)
            out["per_command"] = aggregate_slowlog(entries, self.script_names)
        self.client.close()
        self.client = None
        return out


def parse_commandstats(raw: str) -> list[dict[str, Any]]:
    """INFO commandstats -> [{command, calls, usec, usec_per_call}], most total time first."""
    out: list[dict[str, Any]] = []
    for line in raw.splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, _, fields = line.partition(":")
        values = dict(part.split("=", 1) for part in fields.split(",") if "=" in part)
        out.append(
            {
                "command": name.removeprefix("cmdstat_"),
                "calls": int(values.get("calls", 0)),
                "usec": int(values.get("usec", 0)),
                "usec_per_call": float(values.get("usec_per_call", 0)),
            }
        )
    out.sort(key=lambda entry: entry["usec"], reverse=True)
    return out


def server_cpu(stats: dict[str, Any]) -> float | None:
    """Seconds of CPU the server's main thread used between the two INFO cpu snapshots."""

    def parse(raw: str | None) -> float | None:
        values = dict(line.split(":", 1) for line in (raw or "").splitlines() if ":" in line)
        for user, system in (
            ("used_cpu_user_main_thread", "used_cpu_sys_main_thread"),
            ("used_cpu_user", "used_cpu_sys"),
        ):
            if user in values and system in values:
                return float(values[user]) + float(values[system])
        return None

    before, after = parse(stats.get("cpu_before")), parse(stats.get("cpu_after"))
    return after - before if before is not None and after is not None else None
