"""Issue 32's targets as pure functions: the floors computed from what a run measured, and
each check's verdict (PASS / FAIL / N/A) with the criterion that decided it.

A rate target passes on its ratio to BullMQ (Node), on being within a tolerance of its floor
(the least this machine allows, measured in the same run), or on either where it has both; a
latency target likewise. A target judged on its floor alone still shows the ratio, for
information. ``tests/test_compare_targets.py`` checks the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SCRIPT_COMMANDS = frozenset({"fcall", "fcall_ro", "eval", "eval_ro", "evalsha", "evalsha_ro"})
# The probe's own commands around the timed part, not the system's.
PROBE_COMMANDS = ("config|", "info", "slowlog")


PAIRED = " (median of the rounds' ratios)"


def paired_ratio(own_rounds: object, reference_rounds: object) -> float | None:
    """The median of the per-round ratios own / reference: each round's two runs are minutes
    apart at most, so on a machine whose speed drifts this is steadier than the ratio of the
    two medians. None unless both have the same number (> 1) of rounds, all measured."""
    if not isinstance(own_rounds, list) or not isinstance(reference_rounds, list):
        return None
    if len(own_rounds) < 2 or len(own_rounds) != len(reference_rounds):
        return None
    ratios = []
    for own, reference in zip(own_rounds, reference_rounds, strict=True):
        if not isinstance(own, (int, float)) or not isinstance(reference, (int, float)):
            return None
        if reference == 0:
            return None
        ratios.append(own / reference)
    ratios.sort()
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


@dataclass
class Target:
    text: str
    verdict: str  # PASS, FAIL or N/A
    detail: str


def floor_rate(rtt_us: float | None, server_us: float | None, round_trips: int = 1) -> float | None:
    """Jobs/s of a loop that pays, per job, `round_trips` awaited round trips and the server
    time of its script call: the best one awaited call after another can do."""
    if rtt_us is None or server_us is None or rtt_us <= 0:
        return None
    return 1e6 / (rtt_us * round_trips + server_us)


def latency_floor_ms(
    rtt_us: float | None, server_us: float | None, round_trips: int = 2
) -> float | None:
    """Milliseconds from add to completion when only the round trips the path needs and its
    scripts' server time are paid."""
    if rtt_us is None or server_us is None or rtt_us <= 0:
        return None
    return (rtt_us * round_trips + server_us) / 1000


def rate_target(
    text: str,
    own: float | None,
    reference: float | None,
    factor: float | None,
    floor: float | None = None,
    tolerance: float = 0.10,
    floor_name: str = "floor",
    paired: float | None = None,
) -> Target:
    """PASS when ``own >= factor * reference``, or (with a floor) ``own >= (1 - tolerance) *
    floor``; the detail says which held. A `factor` of None judges on the floor alone (the
    ratio is shown). `paired`, when given, is the ratio to judge instead of own / reference
    (the median of the rounds' own ratios, see `paired_ratio`)."""
    if own is None:
        return Target(text, "N/A", "no lanemq result")
    parts: list[str] = []
    by_ratio = by_floor = False
    if reference:
        ratio = paired if paired is not None else own / reference
        by_ratio = factor is not None and ratio >= factor
        parts.append(
            f"{ratio:.2f}x{PAIRED if paired is not None else ''} "
            f"({own:,.0f} vs {reference:,.0f} jobs/s)"
        )
    if floor:
        share = own / floor
        by_floor = share >= 1 - tolerance
        parts.append(f"{share:.0%} of the {floor_name} {floor:,.0f} jobs/s")
    if not (floor if factor is None else parts):
        return Target(text, "N/A", "no floor" if factor is None else "no reference and no floor")
    return Target(text, decide(by_ratio, by_floor, factor, floor), "; ".join(parts))


def latency_target(
    text: str,
    own: float | None,
    reference: float | None,
    factor: float | None,
    floor: float | None = None,
    tolerance: float = 0.10,
    paired: float | None = None,
) -> Target:
    """PASS when ``own <= factor * reference`` (ms), or (with a floor) ``own <= (1 +
    tolerance) * floor``; `factor` and `paired` as in `rate_target`."""
    if own is None:
        return Target(text, "N/A", "no lanemq result")
    parts: list[str] = []
    by_ratio = by_floor = False
    if reference:
        ratio = paired if paired is not None else own / reference
        by_ratio = factor is not None and ratio <= factor
        parts.append(
            f"{ratio:.2f}x{PAIRED if paired is not None else ''} ({own:.3f} vs {reference:.3f} ms)"
        )
    if floor:
        by_floor = own <= floor * (1 + tolerance)
        parts.append(f"{own / floor:.2f}x the floor {floor:.3f} ms")
    if not (floor if factor is None else parts):
        return Target(text, "N/A", "no floor" if factor is None else "no reference and no floor")
    return Target(text, decide(by_ratio, by_floor, factor, floor), "; ".join(parts))


def decide(by_ratio: bool, by_floor: bool, factor: float | None, floor: float | None) -> str:
    """The verdict, naming the criterion that passed (the ratio first) when the target has
    two."""
    both = factor is not None and bool(floor)
    if by_ratio:
        return "PASS (ratio)" if both else "PASS"
    if by_floor:
        return "PASS (floor)" if both else "PASS"
    return "FAIL"


def at_most_target(text: str, own: float | None, limit: float | None, unit: str) -> Target:
    """PASS when ``own <= limit`` (bytes per job against BullMQ's, usec per job...)."""
    if own is None or limit is None:
        return Target(text, "N/A", "no lanemq result" if own is None else "no reference")
    verdict = "PASS" if own <= limit else "FAIL"
    return Target(text, verdict, f"{own:,.1f} {unit} (limit {limit:,.1f})")


def backlog_target(
    text: str,
    deep: float | None,
    shallow: float | None,
    tolerance: float,
    paired: float | None = None,
) -> Target:
    """PASS when the rate with the deep backlog is within `tolerance` below the shallow one's
    (or above it); `paired` as in `rate_target`."""
    if deep is None or not shallow:
        return Target(text, "N/A", "no lanemq result")
    share = paired if paired is not None else deep / shallow
    verdict = "PASS" if share >= 1 - tolerance else "FAIL"
    how = PAIRED if paired is not None else ""
    return Target(text, verdict, f"{share:.0%}{how} ({deep:,.0f} vs {shallow:,.0f} jobs/s)")


# --------------------------------------------------------------------------- commandstats


def script_commands_in(lua_dir: Path) -> frozenset[str]:
    """Lower-case names of the commands lanemq's Lua calls by name (``redis.call('HSET'``).
    Commands a script runs are counted by INFO commandstats on their own AND inside the
    script call's time, so the CPU per job leaves these out."""
    pattern = re.compile(r"redis\.p?call\(\s*['\"]([A-Za-z]+)['\"]")
    names: set[str] = set()
    for path in sorted(lua_dir.rglob("*.lua")):
        names.update(match.lower() for match in pattern.findall(path.read_text()))
    return frozenset(names)


def cpu_us_per_job(cpu_seconds: float | None, jobs: int) -> float | None:
    """Microseconds of the server's main-thread CPU (INFO cpu, read around the run) per job:
    unlike commandstats' wall-clock usec, a server starved of its core does not inflate it,
    and it counts what runs outside the commands (the event loop, reading and writing)."""
    if cpu_seconds is None or jobs <= 0:
        return None
    return cpu_seconds * 1e6 / jobs


def server_us_per_job(
    commands: Iterable[dict[str, object]], jobs: int, inside_scripts: frozenset[str]
) -> float | None:
    """Redis time per job from parsed INFO commandstats: the script calls, plus every other
    command the scripts do not run themselves (those are inside the script calls' time)."""
    if jobs <= 0:
        return None
    total = 0
    for entry in commands:
        name = str(entry["command"]).lower()
        if name.startswith(PROBE_COMMANDS):
            continue
        if name in SCRIPT_COMMANDS or name not in inside_scripts:
            total += int(str(entry["usec"]))
    return total / jobs


def script_usec_per_call(commands: Iterable[dict[str, object]]) -> tuple[float, int] | None:
    """(usec per call, calls) of the script calls (fcall, evalsha, ...) together."""
    usec = calls = 0
    for entry in commands:
        if str(entry["command"]).lower() in SCRIPT_COMMANDS:
            usec += int(str(entry["usec"]))
            calls += int(str(entry["calls"]))
    return (usec / calls, calls) if calls else None
