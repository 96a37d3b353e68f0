"""Redis CPU of the hot Lua scripts, in instructions (callgrind), repeatable on a noisy machine.

    LANEMQ_DUMP_SCRIPTS=/tmp/scripts cargo test -p lanemq-redis dump_composed_scripts -- --ignored
    python benches/lua_cost.py /tmp/scripts            # needs valgrind and redis-server

Starts `redis-server` under callgrind on --port (6411), then runs a fixed workload by EVALSHA of
the composed add.lua and complete_claim.lua (with --fcall, by FCALL of their functions in
library.lua, as the client runs them on Redis 7): single adds, complete_and_claim cycles of
batch 1, one add_bulk, complete_and_claim cycles of batch 50, renew calls of no job (the fixed
cost of a call). After each phase it dumps the
counters and prints the instructions per call or job inside EVALSHA (or FCALL), and how many of
them the commands' execution (scriptCall) took; the rest is Lua, argument and reply conversion,
and the GC.

With --cpu it runs the same workload on a plain redis-server instead and prints the server's
main-thread CPU (INFO cpu, user + sys) per call or job: the unit `compare.py` reports, without
the client in it. Noisy on a shared machine: compare two script versions run alternately.
With --floor it then runs --bulk jobs through FLOOR_LIBRARY, the job-hash commands alone
(floor_probe), and --bulk more through its lean_probe, one command a job.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import redis


def inclusive(path, function):
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"^\s*([\d,]+) .*:" + function + r" ", out, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


# --floor: the job-hash commands a batch's complete-and-claim makes (an HMGET and an HSET of
# each job completed, an HMGET and an HSET of each job claimed), the batch's ZREM, ZADDs, LPOP
# and XADD, and the claimed rows returned as claim_jobs returns them, with no other logic: what
# the hash-per-job design costs before its semantics (lua/README.md, "Redis work per job").
FLOOR_LIBRARY = """#!lua name=lanemq_floor_probe
local DONE = {"state", "token", "expires", "opts", "seq", "kids", "cancel"}
local CLAIM = {"seq", "attempts", "name", "data", "opts", "created", "delay"}
redis.register_function("floor_probe", function(keys, args)
  local waiting0, active, completed = keys[2] .. ":0", keys[4], keys[6]
  local events = keys[9] .. ":probe" -- "*" ids: not the queue's own stream
  local job = string.sub(keys[1], 1, -5) .. "job:"
  local now, n = args[1], tonumber(args[2])
  local members, scored, ev = {}, {}, {}
  for i = 3, #args do
    local id = args[i]
    local f = redis.call("HMGET", job .. id, unpack(DONE))
    redis.call("HSET", job .. id, "state", "4", "finished", now, "expires", "0")
    local m = string.format("%014x", tonumber(f[5])) .. id
    members[#members + 1] = m
    scored[#scored + 1] = now; scored[#scored + 1] = m
    ev[#ev + 1] = "completed"; ev[#ev + 1] = id; ev[#ev + 1] = "returnvalue"; ev[#ev + 1] = "null"
  end
  if #members > 0 then
    redis.call("ZREM", active, unpack(members))
    redis.call("ZADD", completed, unpack(scored))
  end
  local listed = redis.call("LPOP", waiting0, n) or {}
  local out, act = {}, {}
  for i = 1, #listed do
    local id = string.sub(listed[i], 15)
    local f = redis.call("HMGET", job .. id, unpack(CLAIM))
    local prefix = string.format("%014x", tonumber(f[1]))
    local token = prefix .. ".s-" .. i
    redis.call("HSET", job .. id, "state", "2", "attempts", "1", "processed", now, "token", token,
      "worker", "w1", "expires", now)
    act[#act + 1] = now; act[#act + 1] = prefix .. id
    out[i] = {id, f[3], f[4], f[5] or "{}", "0", 0, f[1], f[6], f[7], 1, false, false, false,
      false, token}
    ev[#ev + 1] = "active"; ev[#ev + 1] = id; ev[#ev + 1] = "prev"; ev[#ev + 1] = "waiting"
  end
  if #act > 0 then redis.call("ZADD", active, unpack(act)) end
  if #ev > 0 then redis.call("XADD", events, "*", "ts", now, unpack(ev)) end
  return out
end)
-- The same batch with one command a job: the claim reads each job (its payload for the
-- worker) and writes nothing of it (the batch's lock in one HSET of its own), the completion
-- writes each job once and reads nothing of it (the client sends the member).
redis.register_function("lean_probe", function(keys, args)
  local waiting0, active, completed = keys[2] .. ":0", keys[4], keys[6]
  local events = keys[9] .. ":probe" -- "*" ids: not the queue's own stream
  local job = string.sub(keys[1], 1, -5) .. "job:"
  local now, n = args[1], tonumber(args[2])
  local members, scored, ev = {}, {}, {}
  for i = 3, #args do
    local m = args[i]
    local id = string.sub(m, 15)
    redis.call("HSET", job .. id, "state", "4", "finished", now)
    members[#members + 1] = m
    scored[#scored + 1] = now; scored[#scored + 1] = m
    ev[#ev + 1] = "completed"; ev[#ev + 1] = id; ev[#ev + 1] = "returnvalue"; ev[#ev + 1] = "null"
  end
  if #members > 0 then
    redis.call("ZREM", active, unpack(members))
    redis.call("ZADD", completed, unpack(scored))
  end
  local listed = redis.call("LPOP", waiting0, n) or {}
  local out, act, locks = {}, {}, {}
  for i = 1, #listed do
    local m = listed[i]
    local id = string.sub(m, 15)
    local f = redis.call("HMGET", job .. id, unpack(CLAIM))
    act[#act + 1] = now; act[#act + 1] = m
    locks[#locks + 1] = id; locks[#locks + 1] = now
    out[i] = {m, f[3], f[4], f[5] or "{}", "0", 0, f[1], f[6], f[7], 1, false, false, false,
      false, "s-" .. i}
    ev[#ev + 1] = "active"; ev[#ev + 1] = id; ev[#ev + 1] = "prev"; ev[#ev + 1] = "waiting"
  end
  if #act > 0 then
    redis.call("ZADD", active, unpack(act))
    redis.call("HSET", keys[1] .. ":locks", unpack(locks))
  end
  if #ev > 0 then redis.call("XADD", events, "*", "ts", now, unpack(ev)) end
  return out
end)
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scripts", help="directory of composed scripts (add.lua, complete_claim.lua)")
    p.add_argument("--port", type=int, default=6411)
    p.add_argument("--single", type=int, default=300)
    p.add_argument("--batch1", type=int, default=200)
    p.add_argument("--bulk", type=int, default=1000)
    p.add_argument("--empty", type=int, default=300, help="calls of renew with no jobs")
    p.add_argument(
        "--prefill",
        type=int,
        default=0,
        help="jobs added in bulk before counting: sets as big as a benchmark's (waiting is a "
        "listpack, scanned on every insert, up to 128 members)",
    )
    p.add_argument(
        "--max-events",
        type=int,
        default=10_000,
        help="the queue's max_events (the default's trimming is approximate, a small one's exact)",
    )
    p.add_argument(
        "--fcall", action="store_true", help="call the library's functions (library.lua) by FCALL"
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="then --bulk jobs through a probe making only the job-hash commands (batch 50)",
    )
    p.add_argument(
        "--cpu",
        action="store_true",
        help="no valgrind: the server's main-thread CPU (INFO cpu) per call or job, in us",
    )
    a = p.parse_args()
    # The KEYS of queue `bench`, as the client sends them (written by dump_composed_scripts).
    with open(os.path.join(a.scripts, "keys.txt")) as listed:
        keys = listed.read().split()
    with open(os.path.join(a.scripts, "options.json")) as options:
        opts = options.read()
    out_dir = tempfile.mkdtemp(prefix="lua_cost.")
    under_valgrind = [
        "valgrind",
        "--tool=callgrind",
        "--dump-instr=no",
        f"--callgrind-out-file={out_dir}/cg.out",
    ]
    vg = subprocess.Popen(
        [
            *([] if a.cpu else under_valgrind),
            "redis-server",
            "--port",
            str(a.port),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    r = redis.Redis(port=a.port)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.3)
    phases = []

    def main_thread_cpu():
        info = r.info("cpu")
        return info["used_cpu_user_main_thread"] + info["used_cpu_sys_main_thread"]

    cpu_marks = []

    def dump(name, units):
        if a.cpu:
            cpu_marks.append(main_thread_cpu())
            phases.append((name, units))
            return
        trigger = f"phase{len(phases) + 1}"  # callgrind_control takes no spaces here
        subprocess.run(
            ["callgrind_control", "-d", trigger, str(vg.pid)], check=True, stdout=subprocess.DEVNULL
        )
        phases.append((name, units))

    if a.fcall:
        loaded = r.function_load(open(os.path.join(a.scripts, "library.lua")).read(), True)
        library = loaded.decode() if isinstance(loaded, bytes) else loaded

        def call(op, *args):
            return r.fcall(f"{library}_{op}", len(keys), *keys, *args)
    else:
        shas = {
            op: r.script_load(open(os.path.join(a.scripts, f"{op}.lua")).read())
            for op in ("add", "complete_claim", "renew")
        }

        def call(op, *args):
            return r.evalsha(shas[op], len(keys), *keys, *args)

    def job(i):
        return ["noop", f'{{"i":{i}}}', opts, "", "0", "0", "0"]

    def ADD(now, *jobs):
        return call("add", now, a.max_events, *[x for j in jobs for x in j])

    def claimed(reply):
        # (id, token) of each claimed job: a row of 15 values each (id first, token last), or
        # claim_jobs' flat reply, the count then 10 values a job (the waiting member first,
        # the token last; decode::claimed_jobs).
        if reply and isinstance(reply[0], list):
            return [(row[0], row[14]) for row in reply]
        n = reply[0] if reply else 0
        return [(reply[1 + 10 * k][14:], reply[10 + 10 * k]) for k in range(n)]

    def CC(now, done, n, seed):
        completions = [x for j in done for x in (*j, "null")]
        refused, jobs = call(
            "complete_claim", now, a.max_events, "w1", 30000, n, seed, *completions
        )
        return refused, claimed(jobs)

    def check(refused):
        assert not [o for o in refused if o not in ([], 0)], refused

    now = 1_800_000_000_000
    ADD(now, job(-1))  # the layout, and the scripts warm
    _, jobs = CC(now, [], 1, "s")
    CC(now, jobs, 0, "s")
    for first in range(0, a.prefill, 1000):
        ADD(now, *[job(i) for i in range(first, min(first + 1000, a.prefill))])
    if a.cpu:
        cpu_marks.append(main_thread_cpu())
    else:
        subprocess.run(
            ["callgrind_control", "-z", str(vg.pid)], check=True, stdout=subprocess.DEVNULL
        )
    for i in range(a.single):
        now += 1
        ADD(now, job(i))
    dump("add_single (per call)", a.single)
    _, jobs = CC(now, [], 1, "s")
    done = 0
    while jobs and done < a.batch1:
        now += 1
        refused, jobs = CC(now, jobs, 1, f"s{done}")
        check(refused)
        done += 1
    dump("complete_and_claim batch 1 (per job)", done)
    ADD(now, *[job(i) for i in range(a.bulk)])
    dump("add_bulk (per job)", a.bulk)
    done = 0
    while jobs:
        now += 1
        n = len(jobs)
        refused, jobs = CC(now, jobs, 50, f"t{done}")
        check(refused)
        done += n
    dump("complete_and_claim batch 50 (per job)", done)
    # A call that does nothing: what every call pays before its work (KEYS and ARGV made into
    # Lua values, the library's per-call reset).
    for _ in range(a.empty):
        call("renew", now, 30000)
    dump("renew of no job (per call)", a.empty)
    if a.floor:
        r.function_load(FLOOR_LIBRARY, replace=True)

        def probe(function: str, label: str) -> None:
            # A fresh backlog, the counters zeroed, then the probe claims and completes it in
            # batches of 50 until none is left.
            nonlocal now
            ADD(now, *[job(i) for i in range(a.bulk)])
            if a.cpu:
                cpu_marks[-1] = main_thread_cpu()
            else:
                subprocess.run(
                    ["callgrind_control", "-z", str(vg.pid)], check=True, stdout=subprocess.DEVNULL
                )
            done, ids = 0, []
            while True:
                now += 1
                rows = r.fcall(function, len(keys), *keys, now, 50, *ids)
                done += len(ids)
                ids = [row[0] for row in rows]
                if not ids:
                    break
            dump(label, done)

        probe("floor_probe", "floor probe batch 50 (per job)")
        probe("lean_probe", "lean probe, a command a job (per job)")
    r.shutdown(nosave=True)
    vg.wait()
    if a.cpu:
        for k, (name, units) in enumerate(phases, 1):
            used = (cpu_marks[k] - cpu_marks[k - 1]) * 1e6 / units
            print(f"{name:40} {used:9.2f} us of the server's main thread")
        return
    for k, (name, units) in enumerate(phases, 1):
        path = f"{out_dir}/cg.out.{k}"
        entry = "fcallCommand" if a.fcall else "evalShaCommand"
        total, commands = inclusive(path, entry), inclusive(path, "scriptCall")
        print(f"{name:40} {total // units:9,d} instructions, commands {commands // units:9,d}")
    print("callgrind files:", out_dir)


if __name__ == "__main__":
    sys.exit(main())
