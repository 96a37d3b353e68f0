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

With --designs it then runs the designs of lua/per-job-designs.md, which touch no per-job key
at claim and completion: the packed store (PACKED_LIBRARY) and the stream (STREAM_LIBRARY, in
an FCALL and as plain pipelined commands), each an add_bulk of --bulk jobs, complete-and-claim
of them at batch 50, then of --batch1 more at batch 1. Under callgrind each phase also prints
the whole server's instructions a job (its socket work, the request parsing, the event loop).
With --memory N (alone) it prints the used_memory per waiting job of N jobs added in bulk, for
layout 4 and both designs, as compare.py's memory row.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

from _support import start_plain_redis


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


# --designs: the designs that touch no per-job key at claim and completion (lua/per-job-designs.md).
# The packed store: a job is one field of the queue's `jobs` hash (its immutable parts packed by
# the client: here `<created>|<seq>|` then name, data and options as `<length>:<text>` each), its
# run (token, worker, claim time) one field of `runs` while it is active, its finish one field of
# `done`; every command touches a whole batch, and the job's state is where it is (the waiting
# list, `runs` and the active set, `done`). Keys end in `p:` so they cannot meet the real ones.
PACKED_LIBRARY = """#!lua name=lanemq_packed_probe
local function packed_keys(keys)
  local base = string.sub(keys[1], 1, -5) .. "p:"
  return base .. "jobs", base .. "runs", base .. "done", base .. "waiting", base .. "active",
    base .. "completed", base .. "events"
end
-- add_bulk: ids and seqs from one HINCRBY of the batch, one HSET, one RPUSH, one XADD.
redis.register_function("packed_add", function(keys, args)
  local jobs, _, _, waiting, _, _, events = packed_keys(keys)
  local now, n = args[1], #args - 1
  local last = redis.call("HINCRBY", keys[1], "p:seq", n)
  local fields, members, ev = {}, {}, {}
  for i = 1, n do
    local seq = last - n + i
    local id = tostring(seq)
    fields[#fields + 1] = id
    fields[#fields + 1] = now .. "|" .. id .. "|" .. args[i + 1]
    members[i] = string.format("1%013x", seq) .. id -- as waiting:0's: the order, then the id
    ev[#ev + 1] = "waiting"; ev[#ev + 1] = id
  end
  redis.call("HSET", jobs, unpack(fields))
  redis.call("RPUSH", waiting, unpack(members))
  redis.call("XADD", events, "MAXLEN", "~", "10000", "*", "ts", now, unpack(ev))
  return n
end)
-- complete_claim: args now, n, seed, worker, lease, events ("1": an event a job, as the real
-- scripts; "0": none, to measure what they cost; "2": one field a kind for the whole batch,
-- its ids joined, the results a JSON array), then (member, token, result) per completion.
-- Completion: ONE HMGET of the batch on `runs` (the token check, the fencing, in Lua), HDEL,
-- ZREM, ONE HSET of the finishes on `done`, ZADD completed. Claim: LPOP n, ONE HMGET of the
-- batch on `jobs`, ONE HSET on `runs`, ZADD active; one XADD of the whole call's events.
-- Replies {refused ids, rows}; a row is {member, packed record, token}.
redis.register_function("packed_cc", function(keys, args)
  local jobs, runs, done, waiting, active, completed, events = packed_keys(keys)
  local now, n, seed, worker = args[1], tonumber(args[2]), args[3], args[4]
  local expiry = tostring(tonumber(now) + tonumber(args[5]))
  local emit, batched = args[6] == "1", args[6] == "2"
  local ev, refused = {}, {}
  local k = (#args - 6) / 3
  if k > 0 then
    local ids = {}
    for i = 1, k do ids[i] = string.sub(args[3 * i + 4], 15) end
    local held = redis.call("HMGET", runs, unpack(ids))
    local ok, members, finishes, scored, results = {}, {}, {}, {}, {}
    for i = 1, k do
      local token, run, id = args[3 * i + 5], held[i], ids[i]
      -- the run record starts with the token and a "|": the report holds the lock or not
      if run and string.sub(run, 1, #token) == token and string.byte(run, #token + 1) == 124 then
        local m = args[3 * i + 4]
        ok[#ok + 1] = id
        members[#members + 1] = m
        -- the finish keeps the token: a repeated report (its reply lost) gets its outcome
        finishes[#finishes + 1] = id
        finishes[#finishes + 1] = "4|" .. now .. "|" .. token .. "|" .. args[3 * i + 6]
        scored[#scored + 1] = now; scored[#scored + 1] = m
        if emit then
          ev[#ev + 1] = "completed"; ev[#ev + 1] = id; ev[#ev + 1] = "returnvalue"
          ev[#ev + 1] = args[3 * i + 6]
        elseif batched then
          results[#results + 1] = args[3 * i + 6]
        end
      else
        refused[#refused + 1] = id
      end
    end
    if #ok > 0 then
      redis.call("HDEL", runs, unpack(ok))
      redis.call("ZREM", active, unpack(members))
      redis.call("HSET", done, unpack(finishes))
      redis.call("ZADD", completed, unpack(scored))
      if batched then
        ev[1] = "completed"; ev[2] = table.concat(ok, " ")
        ev[3] = "returnvalues"; ev[4] = "[" .. table.concat(results, ",") .. "]"
      end
    end
  end
  local rows = {}
  local listed = n > 0 and redis.call("LPOP", waiting, n) or false
  if listed then
    local ids = {}
    for i = 1, #listed do ids[i] = string.sub(listed[i], 15) end
    local records = redis.call("HMGET", jobs, unpack(ids))
    local held, act = {}, {}
    for i = 1, #listed do
      local token = seed .. "-" .. i
      held[#held + 1] = ids[i]; held[#held + 1] = token .. "|" .. worker .. "|" .. now
      act[#act + 1] = expiry; act[#act + 1] = listed[i]
      rows[i] = {listed[i], records[i], token}
      if emit then
        ev[#ev + 1] = "active"; ev[#ev + 1] = ids[i]; ev[#ev + 1] = "prev"
        ev[#ev + 1] = "waiting"
      end
    end
    redis.call("HSET", runs, unpack(held))
    redis.call("ZADD", active, unpack(act))
    if batched then ev[#ev + 1] = "active"; ev[#ev + 1] = table.concat(ids, " ") end
  end
  if #ev > 0 then
    redis.call("XADD", events, "MAXLEN", "~", "10000", "*", "ts", now, unpack(ev))
  end
  return {refused, rows}
end)
"""

# The stream design (ChasquiMQ's, on Redis 7.0: XACK then XDEL where Redis 8.2 has XACKDEL): a
# waiting job is one stream entry (fields n, the name, and d, the record packed as above), a
# claim is XREADGROUP COUNT n of the group, a completion XACK + XDEL of the entry ids. The
# stream_cc function runs the same commands inside an FCALL, with one XADD of the call's events
# as the other probes make; --designs also runs them as plain commands (a pipeline), as
# ChasquiMQ's client sends them, with no events.
STREAM_LIBRARY = """#!lua name=lanemq_stream_probe
redis.register_function("stream_cc", function(keys, args)
  local base = string.sub(keys[1], 1, -5)
  local stream, events = base .. "s:jobs", base .. "s:events"
  local now, n, k = args[1], args[2], #args - 2
  local ev = {}
  if k > 0 then
    local ids = {unpack(args, 3)}
    redis.call("XACK", stream, "g", unpack(ids))
    redis.call("XDEL", stream, unpack(ids))
    for i = 1, k do
      ev[#ev + 1] = "completed"; ev[#ev + 1] = ids[i]; ev[#ev + 1] = "returnvalue"
      ev[#ev + 1] = "null"
    end
  end
  local read = redis.call("XREADGROUP", "GROUP", "g", "w1", "COUNT", n, "STREAMS", stream, ">")
  local rows = read and read[1][2] or {}
  for i = 1, #rows do
    ev[#ev + 1] = "active"; ev[#ev + 1] = rows[i][1]; ev[#ev + 1] = "prev"; ev[#ev + 1] = "waiting"
  end
  if #ev > 0 then
    redis.call("XADD", events, "MAXLEN", "~", "10000", "*", "ts", now, unpack(ev))
  end
  return rows
end)
"""


def program_total(path):
    """Every instruction the server ran in a phase: its socket reads and writes, the request
    parsing and the event loop included (what INFO cpu counts, not only the command)."""
    out = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True).stdout
    m = re.search(r"^\s*([\d,]+) .*PROGRAM TOTALS", out, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


# The command functions of the plain (not scripted) stream phases: their own share of the work.
STREAM_COMMANDS = ("xaddCommand", "xackCommand", "xdelCommand", "xreadCommand")


class Meter:
    """Phases of the run: callgrind dumps (pid given) or INFO cpu marks of a plain server."""

    def __init__(self, r, pid):
        self.r, self.pid, self.phases, self.marks = r, pid, [], []

    def main_thread_cpu(self):
        info = self.r.info("cpu")
        return info["used_cpu_user_main_thread"] + info["used_cpu_sys_main_thread"]

    def callgrind(self, *args):
        subprocess.run(
            ["callgrind_control", *args, str(self.pid)], check=True, stdout=subprocess.DEVNULL
        )

    def start(self):
        if self.pid is None:
            self.marks.append(self.main_thread_cpu())
        else:
            self.callgrind("-z")

    def zero(self):
        """Forget what the server did since the last phase (a backlog's setup, say)."""
        if self.pid is None:
            self.marks[-1] = self.main_thread_cpu()
        else:
            self.callgrind("-z")

    def dump(self, name, units, plain=False):
        """End a phase of `units` jobs or calls; `plain`: its commands were sent as such."""
        if self.pid is None:
            self.marks.append(self.main_thread_cpu())
        else:
            self.callgrind("-d", f"phase{len(self.phases) + 1}")  # no spaces allowed here
        self.phases.append((name, units, plain))

    def report(self, out_dir, entry):
        if self.pid is None:
            for k, (name, units, _) in enumerate(self.phases, 1):
                if not units:
                    print(f"{name:46} (no job)")
                    continue
                used = (self.marks[k] - self.marks[k - 1]) * 1e6 / units
                print(f"{name:46} {used:9.2f} us of the server's main thread")
            return
        print(f"{'phase':46} {'in the call':>11} {'commands':>9} {'server':>9}  (instructions)")
        for k, (name, units, plain) in enumerate(self.phases, 1):
            if not units:
                print(f"{name:46} (no job)")
                continue
            path = f"{out_dir}/cg.out.{k}"
            if plain:  # no script: the call is processCommand, the commands their functions
                total = inclusive(path, "processCommand")
                commands = sum(inclusive(path, c) for c in STREAM_COMMANDS)
            else:
                total, commands = inclusive(path, entry), inclusive(path, "scriptCall")
            server = program_total(path)
            print(f"{name:46} {total // units:11,d} {commands // units:9,d} {server // units:9,d}")
        print("callgrind files:", out_dir)


def packed_part(i, opts):
    """A job's name, data and options as the client would pack them (`<length>:<text>` each)."""
    return "".join(f"{len(t)}:{t}" for t in ("noop", f'{{"i":{i}}}', opts))


PACKED_EVENTS = {"each": "1", "none": "0", "batch": "2"}  # packed_cc's events argument


class PackedStore:
    """Design 1 (PACKED_LIBRARY), driven as a worker would drive it."""

    def __init__(self, r, keys, opts, events="each"):
        self.r, self.keys, self.opts, self.calls = r, keys, opts, 0
        self.events = PACKED_EVENTS[events]
        r.function_load(PACKED_LIBRARY, replace=True)
        base = keys[0][:-4] + "p:"
        # A fresh store each time: a variant measured later works on hashes of the same size
        # as the first (a bigger hash misses the cache more: INFO cpu, not the instructions).
        r.delete(*[base + k for k in ("jobs", "runs", "done", "waiting", "active", "completed")])
        # Sentinels, as the real layout's active set has: the hashes are hash tables and the
        # sets skiplists whatever the queue's size (a listpack is scanned on every lookup: a
        # fresh `done` hash and `completed` set cost more a job until they convert, at 128
        # entries, as a queue that has run a while has converted them).
        for name in ("jobs", "runs", "done"):
            r.hset(base + name, "", "-" * 256)
        for name in ("active", "completed"):
            r.zadd(base + name, {"~" + "-" * 256: float("inf")})

    def add(self, now, first, count):
        for start in range(first, first + count, 1000):
            parts = [
                packed_part(i, self.opts) for i in range(start, min(start + 1000, first + count))
            ]
            self.r.fcall("packed_add", len(self.keys), *self.keys, now, *parts)

    def step(self, now, rows, n):
        self.calls += 1
        reports = [x for row in rows for x in (row[0], row[2], "null")]
        seed = f"t{self.calls}"
        refused, rows = self.r.fcall(
            "packed_cc",
            len(self.keys),
            *self.keys,
            now,
            n,
            seed,
            "w1",
            30000,
            self.events,
            *reports,
        )
        assert not refused, refused
        return rows


class StreamStore:
    """Design 2 (STREAM_LIBRARY): `scripted`, its commands in one FCALL a batch with events;
    else as plain commands in one pipeline a batch, ChasquiMQ's way (no events)."""

    def __init__(self, r, keys, opts, scripted):
        self.r, self.keys, self.opts, self.scripted = r, keys, opts, scripted
        self.stream = keys[0][:-4] + "s:jobs"
        r.function_load(STREAM_LIBRARY, replace=True)
        r.delete(self.stream)
        r.xgroup_create(self.stream, "g", id="0", mkstream=True)

    def add(self, now, first, count):
        pipe = self.r.pipeline(transaction=False)
        for i in range(first, first + count):
            pipe.xadd(self.stream, {"n": "noop", "d": f"{now}|{i}|" + packed_part(i, self.opts)})
            if len(pipe) == 1000:
                pipe.execute()
        pipe.execute()

    def step(self, now, rows, n):
        ids = [row[0] for row in rows]
        if self.scripted:
            return self.r.fcall("stream_cc", len(self.keys), *self.keys, now, n, *ids)
        pipe = self.r.pipeline(transaction=False)
        if ids:
            pipe.xack(self.stream, "g", *ids)
            pipe.xdel(self.stream, *ids)
        pipe.xreadgroup("g", "w1", {self.stream: ">"}, count=n)
        read = pipe.execute()[-1]
        return read[0][1] if read else []


def drain(store, now, n):
    """Complete-and-claim in batches of `n` until nothing is left: the jobs completed, and now."""
    done, rows = 0, []
    while True:
        now += 1
        completed = len(rows)
        rows = store.step(now, rows, n)
        done += completed
        if not rows:
            return done, now


def run_designs(r, keys, opts, meter, now, bulk, batch1):
    """The designs that touch no per-job key at claim and completion: each adds `bulk` jobs in
    bulk, drains them at batch 50, then drains `batch1` more at batch 1."""
    stores = [
        ("packed", PackedStore(r, keys, opts), False),
        ("stream fcall", StreamStore(r, keys, opts, scripted=True), False),
        ("stream plain", StreamStore(r, keys, opts, scripted=False), True),
    ]
    for label, store, plain in stores:
        meter.zero()
        store.add(now, 0, bulk)
        # a stream's add is an XADD a job, pipelined: no script in either variant
        meter.dump(f"{label} add_bulk (per job)", bulk, isinstance(store, StreamStore))
        done, now = drain(store, now, 50)
        meter.dump(f"{label} complete_claim batch 50 (per job)", done, plain)
        store.add(now, bulk, batch1)
        meter.zero()
        done, now = drain(store, now, 1)
        meter.dump(f"{label} complete_claim batch 1 (per job)", done, plain)
    # What the events cost the packed store: the same batches without them, and with one
    # field a kind for the batch instead of an event a job.
    for events in ("none", "batch"):
        variant = PackedStore(r, keys, opts, events=events)
        variant.add(now, 0, bulk)
        meter.zero()
        done, now = drain(variant, now, 50)
        meter.dump(f"packed, events {events}, batch 50 (per job)", done)
    return now


def measure_memory(r, keys, opts, library, n):
    """Bytes of used_memory per waiting job, `n` jobs added in bulk on an emptied server, for
    the real layout (`library`'s add) and the two designs, as compare.py's memory row."""
    now = 1_800_000_000_000

    def per_job(setup, fill):
        r.flushall()
        setup()  # the queue's keys made, the library loaded: not counted
        before = r.info("memory")["used_memory"]
        fill()
        return (r.info("memory")["used_memory"] - before) / n

    def real_add(first, count):
        for start in range(first, first + count, 1000):
            jobs = [
                x
                for i in range(start, min(start + 1000, first + count))
                for x in ("noop", f'{{"i":{i}}}', opts, "", "0", "0", "0")
            ]
            r.fcall(f"{library}_add", len(keys), *keys, now, 10_000, *jobs)

    holder = {}

    def packed_setup():
        holder["p"] = PackedStore(r, keys, opts)
        holder["p"].add(now, 0, 1)

    def stream_setup():
        holder["s"] = StreamStore(r, keys, opts, scripted=False)
        holder["s"].add(now, 0, 1)

    figures = {
        "layout 4 (a hash per job)": per_job(lambda: real_add(0, 1), lambda: real_add(1, n)),
        "packed store": per_job(packed_setup, lambda: holder["p"].add(now, 1, n)),
        "stream": per_job(stream_setup, lambda: holder["s"].add(now, 1, n)),
    }
    for name, used in figures.items():
        print(f"{name:46} {used:9.1f} bytes of used_memory per waiting job ({n:,} jobs)")


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
        "--designs",
        action="store_true",
        help="then the designs of lua/per-job-designs.md: packed store, stream (FCALL and plain)",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=0,
        help="only the bytes per waiting job of layout 4 and the designs, over this many jobs",
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
    vg, r = start_plain_redis(a.port, [] if a.cpu or a.memory else under_valgrind)
    if a.memory:
        loaded = r.function_load(open(os.path.join(a.scripts, "library.lua")).read(), True)
        library = loaded.decode() if isinstance(loaded, bytes) else loaded
        measure_memory(r, keys, opts, library, a.memory)
        r.shutdown(nosave=True)
        return vg.wait()
    meter = Meter(r, None if a.cpu else vg.pid)
    dump, zero = meter.dump, meter.zero

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
    meter.start()
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
            zero()
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
    if a.designs:
        now = run_designs(r, keys, opts, meter, now, a.bulk, a.batch1)
    r.shutdown(nosave=True)
    vg.wait()
    meter.report(out_dir, "fcallCommand" if a.fcall else "evalShaCommand")


if __name__ == "__main__":
    sys.exit(main())
