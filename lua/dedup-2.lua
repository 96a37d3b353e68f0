-- Dedup keys by id. ARGV = now, max_events, op, dedup id:
--   "get"     Returns {owner id} while the key is held, else {}.
--   "remove"  Deletes the key (and its keep_last job). Returns {1} if it meant anything (held,
--             or carrying a job to add), else {0}.
local op, dedup_id = ARGV[3], ARGV[4]
local key = key_read(dedup_id)
if op == "get" then
  if held(key) then return {key.owner} end
  return {}
elseif op == "remove" then
  local live = key ~= nil and (held(key) or key.next ~= nil)
  if key then key_delete(dedup_id) end
  return {live and 1 or 0}
end
return redis.error_reply("dedup: unknown op " .. tostring(op))
