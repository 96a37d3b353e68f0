-- claim: ARGV = now, max_events, worker id, lease (ms), max jobs, token seed. Promotes due
-- delayed jobs, then (unless paused, and within the rate limit and the active cap) moves up to
-- max jobs from the front of waiting to active, each locked with a fresh token until now + lease.
-- Returns per claimed job only what the client cannot know: {id, name, data, opts, prio, ord,
-- seq, created, delay, attempts, stalled, progress, reason, trace}; the state, lock and
-- processed time are the ones this call set.
local now, max_events, worker = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local lease, max_jobs, seed = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]

for _, due in ipairs(redis.call("ZRANGEBYSCORE", DELAYED, "-inf", now)) do
  local id = string.sub(due, 15)
  redis.call("ZREM", DELAYED, due)
  to_waiting(id, false, cjson.decode(get("opts", id)).lifo)
  emit(now, max_events, "waiting", id, "prev", "delayed")
end
if redis.call("HGET", META, "paused") == "1" then return {} end

local allowed = max_jobs
local rate_max = tonumber(redis.call("HGET", META, "rate_max") or "0")
if rate_max > 0 then
  local duration = tonumber(redis.call("HGET", META, "rate_duration"))
  local start = tonumber(redis.call("HGET", META, "rate_start") or "0")
  if now >= start + duration then
    redis.call("HSET", META, "rate_start", now, "rate_count", 0)
  end
  allowed = math.min(allowed, rate_max - tonumber(redis.call("HGET", META, "rate_count") or "0"))
end
local max_active = tonumber(redis.call("HGET", META, "max_active") or "0")
if max_active > 0 then
  allowed = math.min(allowed, max_active - redis.call("ZCARD", ACTIVE))
end

local claimed = {}
if allowed > 0 then
  local popped = redis.call("ZPOPMIN", WAITING, allowed)
  for i = 1, #popped, 2 do
    local id = string.sub(popped[i], 15)
    set("state", id, ACTIVE_STATE)
    local attempts = redis.call("HINCRBY", F["attempts"], id, 1)
    set("processed", id, now)
    set("token", id, seed .. "-" .. ((i + 1) / 2))
    set("worker", id, worker)
    set("expires", id, now + lease)
    local seq = num("seq", id)
    redis.call("ZADD", ACTIVE, now + lease, hex(seq) .. id)
    emit(now, max_events, "active", id, "prev", "waiting")
    claimed[#claimed + 1] = {id, get("name", id), get("data", id), get("opts", id),
      get("prio", id), get("ord", id), seq, get("created", id), get("delay", id), attempts,
      get("stalled", id), get("progress", id), get("reason", id) or false,
      get("trace", id) or false, seed .. "-" .. ((i + 1) / 2)}
  end
  if rate_max > 0 then redis.call("HINCRBY", META, "rate_count", #claimed) end
end
if #claimed == 0 and redis.call("ZCARD", WAITING) == 0 and not redis.call("HGET", META, "drained") then
  redis.call("HSET", META, "drained", "1")
  emit(now, max_events, "drained")
end
return claimed
