"""Redis time of the two ways to lay out a job's fields, on a real server (not callgrind).

    python benches/layout_probe.py            # starts its own redis-server; about a minute

lanemq keeps each job field in a hash of its own (`<base>j:<field>`, job id -> value), so one
command reads or writes a field of a whole batch. BullMQ keeps one hash per job. With many
jobs, every lookup in a big per-field hash misses the cache (benches/history/5-10.md), while a job's
own hash is one small listpack. This probe fills 100,000 jobs both ways and times a step like
a claim and completion of 50 jobs (read 13 fields of each, write 6, delete the 3 of the lock)
as one FCALL per batch, over the first 50,000 jobs, twice (the first pass writes fields that
did not exist yet, as a claim of a new job does). It prints the server's time per job (INFO
commandstats) for each layout.
"""

import argparse
import sys

import redis
from _support import RedisServer

READS = ["name", "data", "opts", "prio", "ord", "seq", "created", "delay", "attempts"]
READS += ["stalled", "progress", "reason", "trace"]
WRITES = ["state", "attempts", "processed", "token", "worker", "expires"]
# Cleared again when a job completes (lanemq's lock): those hashes stay small.
CLEARED = ["token", "worker", "expires"]
VALUES = {
    "name": "noop",
    "data": '{"i":12345}',
    "opts": "{}",
    "prio": "0",
    "ord": "123456",
    "seq": "123456",
    "created": "1700000000000",
}


def quoted(names):
    return ", ".join(f"'{n}'" for n in names)


LIBRARY = f"""#!lua name=layout_probe
-- One hash per field: one HMGET / HSET per field for the whole batch.
redis.register_function('per_field', function(keys, ids)
  for _, f in ipairs({{{quoted(READS)}}}) do redis.call('HMGET', 'f:' .. f, unpack(ids)) end
  local pairs_ = {{}}
  for i = 1, #ids do pairs_[2 * i - 1] = ids[i]; pairs_[2 * i] = '1700000000000' end
  for _, f in ipairs({{{quoted(WRITES)}}}) do redis.call('HSET', 'f:' .. f, unpack(pairs_)) end
  for _, f in ipairs({{{quoted(CLEARED)}}}) do redis.call('HDEL', 'f:' .. f, unpack(ids)) end
  return #ids
end)
-- One hash per job: one HMGET and one HSET per job.
redis.register_function('per_job', function(keys, ids)
  for i = 1, #ids do
    local key = 'j:' .. ids[i]
    redis.call('HMGET', key, {quoted(READS)})
    redis.call('HSET', key, {", ".join(f"'{f}', '1700000000000'" for f in WRITES)})
    redis.call('HDEL', key, {quoted(CLEARED)})
  end
  return #ids
end)
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--redis-server", default="redis-server")
    a = p.parse_args()
    server = RedisServer(a.redis_server)  # a private server, no persistence
    server.start()
    try:
        r = redis.Redis(port=server.port)
        r.function_load(LIBRARY, replace=True)
        pipe = r.pipeline(transaction=False)
        for field in READS + WRITES:  # real hash tables from the start, as lanemq's sentinel
            pipe.hset("f:" + field, "", "-" * 256)
        for i in range(a.jobs):
            for field, value in VALUES.items():
                pipe.hset("f:" + field, str(i), value)
            pipe.hset(f"j:{i}", mapping=VALUES)
            if i % 2_000 == 0:
                pipe.execute()
        pipe.execute()
        claimed = a.jobs // 2
        print(f"{a.jobs:,} jobs, batches of {a.batch}; server time per job claimed:")
        for attempt in ("first pass", "second pass"):
            for layout in ("per_field", "per_job"):
                r.config_resetstat()
                for first in range(0, claimed, a.batch):
                    r.fcall(layout, 0, *[str(i) for i in range(first, first + a.batch)])
                usec = r.info("commandstats")["cmdstat_fcall"]["usec"]
                print(f"  {attempt:12} {layout:10} {usec / claimed:6.2f} us")
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
