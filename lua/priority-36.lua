-- update_priority: ARGV = now, max_events, job id, priority, lifo (0/1). Sets the job's priority
-- and its options' priority and lifo; a waiting job moves to the back of its new priority (the
-- front when LIFO). Returns {"ok"} or {"missing"}.
local id, priority, lifo = ARGV[3], ARGV[4], ARGV[5] == "1"

local state = get("state", id)
if not state then return {"missing"} end
-- The options are serde's JSON: edited as text, since a cjson round trip would rewrite numbers
-- (exponents past 14 digits). Quotes inside JSON strings are escaped, so these patterns can
-- only match the top-level keys.
local opts, n_priority, n_lifo = get("opts", id), 0, 0
opts, n_priority = string.gsub(opts, '"priority":%d+', '"priority":' .. priority, 1)
opts, n_lifo = string.gsub(opts, '"lifo":%a+', '"lifo":' .. (lifo and "true" or "false"), 1)
if n_priority ~= 1 or n_lifo ~= 1 then
  return redis.error_reply("job " .. id .. ": stored options lack priority or lifo")
end
set("opts", id, opts)
set("prio", id, priority)
if tonumber(state) == WAITING_STATE then
  redis.call("ZREM", WAITING, member(num("ord", id), id))
  to_waiting(id, false, lifo)
end
return {"ok"}
