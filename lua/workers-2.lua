-- workers: the registry of running workers (the rules of crates/lanemq-core/src/jobs/workers.rs).
-- Its KEYS are its own, not the queue's block: the hash of entries (worker id -> "<last
-- heartbeat, ms> <description JSON>") and the sorted set of their expiries (score: when the
-- entry expires, ms; member: the worker id). ARGV = now, max_events (unused), op, then by op:
--   "beat", id, entry, expires   writes the entry; returns {"ok"}
--   "remove", id                 deletes it; returns {"ok", 1 if it was there, else 0}
--   "list"                       deletes the entries expired at now (expires <= now), then
--                                returns {"ok", id, entry, id, entry, ...}
local entries, expiries, op = KEYS[1], KEYS[2], ARGV[3]

if op == "beat" then
  redis.call("HSET", entries, ARGV[4], ARGV[5])
  redis.call("ZADD", expiries, ARGV[6], ARGV[4])
  return {"ok"}
elseif op == "remove" then
  redis.call("ZREM", expiries, ARGV[4])
  return {"ok", redis.call("HDEL", entries, ARGV[4])}
elseif op == "list" then
  local gone = redis.call("ZRANGEBYSCORE", expiries, "-inf", ARGV[1])
  chunked("HDEL", entries, gone, 1)
  chunked("ZREM", expiries, gone, 1)
  local out = redis.call("HGETALL", entries)
  table.insert(out, 1, "ok")
  return out
end
return redis.error_reply("workers: unknown op " .. tostring(op))
