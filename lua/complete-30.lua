-- complete_many: ARGV = now, max_events, then (job id, token, result JSON) per job. Each job is
-- checked on its own; a refused one changes nothing. Returns per job {} when completed, or
-- {kind, message} with kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]

local function delete(id)
  local state, seq = tonumber(get("state", id)), num("seq", id)
  local sets = {[WAITING_STATE] = WAITING, [DELAYED_STATE] = DELAYED, [ACTIVE_STATE] = ACTIVE,
    [CHILDREN_STATE] = CHILDREN, [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}
  if state == WAITING_STATE then redis.call("ZREM", WAITING, member(num("ord", id), id))
  elseif sets[state] then redis.call("ZREM", sets[state], hex(seq) .. id) end
  for _, field in ipairs(FIELDS) do redis.call("HDEL", F[field], id) end
  redis.call("HDEL", LOGS, id)
end

-- Applies a retention policy (remove_on_complete / remove_on_fail) to a finished set.
local function retain(set_key, policy, just_finished)
  if policy == "keep_all" or policy == nil then return end
  if policy == "remove_all" then delete(just_finished) return end
  local keep = policy.keep
  local limit = (keep.limit ~= cjson.null and keep.limit) or math.huge
  local doomed = {}
  if keep.count ~= cjson.null and keep.count then
    local over = redis.call("ZCARD", set_key) - keep.count
    if over > 0 then doomed = redis.call("ZRANGE", set_key, 0, math.min(over, limit) - 1) end
  end
  if keep.age ~= cjson.null and keep.age then
    for _, m in ipairs(redis.call("ZRANGEBYSCORE", set_key, "-inf", "(" .. (now - keep.age))) do
      doomed[#doomed + 1] = m
    end
  end
  local seen, removed = {}, 0
  for _, m in ipairs(doomed) do
    if removed >= limit then break end
    if not seen[m] then
      seen[m] = true
      removed = removed + 1
      delete(string.sub(m, 15))
    end
  end
end

local out = {}
for i = 3, #ARGV, 3 do
  local id, token, result = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local state = get("state", id)
  if not state then
    out[#out + 1] = {"missing", "job " .. id .. " not found"}
  elseif tonumber(state) ~= ACTIVE_STATE then
    out[#out + 1] = {"state", state}
  elseif get("token", id) ~= token then
    out[#out + 1] = {"lock", "job " .. id .. " is locked by another token (its lease was lost)"}
  elseif num("expires", id) <= now then
    out[#out + 1] = {"lock", "job " .. id .. ": the lock expired at " .. get("expires", id)}
  else
    local seq = num("seq", id)
    redis.call("ZREM", ACTIVE, hex(seq) .. id)
    set("state", id, COMPLETED_STATE)
    set("finished", id, now)
    set("result", id, result)
    set("token", id, nil); set("worker", id, nil); set("expires", id, nil)
    redis.call("ZADD", COMPLETED, now, hex(seq) .. id)
    emit(now, max_events, "completed", id, "returnvalue", result)
    retain(COMPLETED, cjson.decode(get("opts", id)).remove_on_complete, id)
    out[#out + 1] = {}
  end
end
return out
