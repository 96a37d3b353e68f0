-- update_priority: ARGV = now, max_events, job id, priority, lifo (0/1). Sets the job's priority
-- and its options' priority and lifo; a waiting job moves to the back of its new priority (the
-- front when LIFO). Returns {"ok"} or {"missing"}.
local id, priority, lifo = ARGV[3], ARGV[4], ARGV[5] == "1"

local state = get("state", id)
if not state then return {"missing"} end
-- The options are serde's JSON: edited as text, since a cjson round trip would rewrite numbers
-- (exponents past 14 digits). Quotes inside JSON strings are escaped, so these patterns can
-- only match the top-level keys (no nested option has these names). A key at its default is
-- left out of the JSON (options.rs): then it goes in first.
local function with_option(opts, pattern, key, value)
  local edited, n = string.gsub(opts, '"' .. key .. '":' .. pattern, '"' .. key .. '":' .. value, 1)
  if n == 1 then return edited end
  if opts == "{}" then return '{"' .. key .. '":' .. value .. "}" end
  return '{"' .. key .. '":' .. value .. "," .. string.sub(opts, 2)
end
local opts = with_option(opts_of(id), "%d+", "priority", priority)
set("opts", id, with_option(opts, "%a+", "lifo", lifo and "true" or "false"))
-- Out of waiting under the old priority (which says where it is), back in under the new one.
local waiting = tonumber(state) == WAITING_STATE
if waiting then waiting_remove(id) end
set("prio", id, priority)
if waiting then to_waiting(id, false, lifo) end
return {"ok"}
