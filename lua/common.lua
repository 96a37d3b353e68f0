-- Shared by every lanemq script (prepended when a script is loaded; see crates/lanemq-redis).
-- Every script receives the same KEYS, in this order (see README.md for what each holds):
local META, WAITING, DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED, LOGS, EVENTS, MARKER =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local FIELDS = {"name", "data", "opts", "state", "prio", "ord", "seq", "created", "delay",
  "processed", "finished", "attempts", "stalled", "progress", "result", "reason", "trace",
  "token", "worker", "expires"}
local F = {}
for i, field in ipairs(FIELDS) do F[field] = KEYS[10 + i] end

local WAITING_STATE, DELAYED_STATE, ACTIVE_STATE, CHILDREN_STATE, COMPLETED_STATE, FAILED_STATE =
  0, 1, 2, 3, 4, 5

local function get(field, id) return redis.call("HGET", F[field], id) end
local function num(field, id) return tonumber(redis.call("HGET", F[field], id) or "0") end
local function set(field, id, value)
  if value == nil or value == false then redis.call("HDEL", F[field], id)
  else redis.call("HSET", F[field], id, value) end
end

-- Adds n to a counter in META and returns the new value.
local function counter(name, n) return redis.call("HINCRBY", META, name, n) end

-- 14 hex digits of a non-negative integer below 2^53 (exact in Lua's doubles).
local function hex(n)
  local digits = {}
  for i = 14, 1, -1 do
    local d = n % 16
    digits[i] = string.sub("0123456789abcdef", d + 1, d + 1)
    n = (n - d) / 16
  end
  return table.concat(digits)
end

-- Members of the ordered sets: a sortable prefix, then the id. Orders may be negative (LIFO and
-- released jobs go first), so they are offset by 2^52 before encoding.
local ORDER_OFFSET = 4503599627370496
local function member(order, id) return hex(order + ORDER_OFFSET) .. id end

local function emit(now, max_events, event, id, key, value)
  if tonumber(max_events) <= 0 then counter("event", 1) return end
  local n = counter("event", 1)
  local entry = {"XADD", EVENTS, "MAXLEN", max_events, n .. "-0", "event", event, "ts", now}
  if id then entry[#entry + 1] = "job"; entry[#entry + 1] = id end
  if key then entry[#entry + 1] = key; entry[#entry + 1] = value end
  redis.call(unpack(entry))
end

-- Wakes idle workers (BZPOPMIN on MARKER); score = when the work is due.
local function wake(at) redis.call("ZADD", MARKER, at, "w") end

-- Puts a job at the back of its priority in waiting (front with `front`, or when LIFO).
local function to_waiting(id, front, lifo)
  local seq = counter("seq", 1)
  local order = seq
  if front or lifo then order = -seq end
  set("ord", id, order)
  set("state", id, WAITING_STATE)
  redis.call("ZADD", WAITING, num("prio", id), member(order, id))
  redis.call("HDEL", META, "drained")
  wake(0)
end

-- A job as the client reads it: the id, then every field in FIELDS order.
local function job(id)
  local out = {id}
  for i, field in ipairs(FIELDS) do out[i + 1] = redis.call("HGET", F[field], id) or false end
  return out
end
