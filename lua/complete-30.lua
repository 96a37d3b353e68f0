-- complete_many: ARGV = now, max_events, then (job id, token, result JSON) per job. Each job is
-- checked on its own; a refused one changes nothing. Returns per job {} when completed, or
-- {kind, message} with kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]

local out = {}
for i = 3, #ARGV, 3 do
  local id, token, result = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local refused = check(id, token)
  if refused then
    out[#out + 1] = refused
  else
    unlock(id)
    set("state", id, COMPLETED_STATE)
    set("finished", id, now)
    set("result", id, result)
    redis.call("ZADD", COMPLETED, now, hex(num("seq", id)) .. id)
    emit(now, max_events, "completed", id, "returnvalue", result)
    local opts = get("opts", id)
    -- Most jobs keep everything: skip decoding their options.
    if not string.find(opts, '"remove_on_complete":"keep_all"', 1, true) then
      retain(COMPLETED, cjson.decode(opts).remove_on_complete, id)
    end
    out[#out + 1] = {}
  end
end
return out
