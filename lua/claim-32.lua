-- claim: ARGV = now, max_events, worker id, lease (ms), max jobs, token seed. Promotes due
-- delayed jobs, then (unless paused, and within the rate limit and the active cap) moves up to
-- max jobs from the front of waiting to active, each locked with a fresh token until now + lease.
-- Returns per claimed job only what the client cannot know: {id, name, data, opts, prio, ord,
-- seq, created, delay, attempts, stalled, progress, reason, trace}; the state, lock and
-- processed time are the ones this call set.
local now, worker = NOW, ARGV[3]
local lease, max_jobs, seed = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]

for _, due in ipairs(redis.call("ZRANGEBYSCORE", DELAYED, "-inf", NOW_TEXT)) do
  local id = string.sub(due, 15)
  redis.call("ZREM", DELAYED, due)
  to_waiting(id, false, cjson.decode(get("opts", id)).lifo)
  emit("waiting", id, "prev", "delayed")
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
  local ids = {}
  for i = 1, #popped, 2 do ids[#ids + 1] = string.sub(popped[i], 15) end
  if #ids > 0 then
    -- One command per field for the whole batch (see complete-30.lua).
    local attempts, seqs = mget("attempts", ids), mget("seq", ids)
    local states, tried, processed, tokens, workers, expiry, active = {}, {}, {}, {}, {}, {}, {}
    -- Text, not Lua numbers: formatting a number for redis.call costs more than the command.
    local active_state, until_text = tostring(ACTIVE_STATE), int(now + lease)
    for i, id in ipairs(ids) do
      attempts[i] = tonumber(attempts[i] or "0") + 1
      push2(tokens, id, seed .. "-" .. i)
      push2(states, id, active_state); push2(tried, id, attempts[i])
      push2(processed, id, NOW_TEXT); push2(workers, id, worker); push2(expiry, id, until_text)
      push2(active, until_text, hex(tonumber(seqs[i])) .. id)
    end
    mset("state", states); mset("attempts", tried); mset("processed", processed)
    mset("token", tokens); mset("worker", workers); mset("expires", expiry)
    zadd(ACTIVE, active)
    reserve_events(#ids)
    for _, id in ipairs(ids) do emit("active", id, "prev", "waiting") end
    local columns = {}
    for _, field in ipairs({"name", "data", "opts", "prio", "ord", "created", "delay", "stalled",
        "progress", "reason", "trace"}) do
      columns[field] = mget(field, ids)
    end
    for i, id in ipairs(ids) do
      local c = function(field) return columns[field][i] end
      claimed[i] = {id, c("name"), c("data"), c("opts"), c("prio"), c("ord"), seqs[i],
        c("created"), c("delay"), attempts[i], c("stalled"), c("progress"), c("reason"),
        c("trace"), tokens[2 * i]}
    end
  end
  if rate_max > 0 then redis.call("HINCRBY", META, "rate_count", #claimed) end
end
if #claimed == 0 and redis.call("ZCARD", WAITING) == 0 and not redis.call("HGET", META, "drained") then
  redis.call("HSET", META, "drained", "1")
  emit("drained")
end
return claimed
