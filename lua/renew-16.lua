-- renew_many: ARGV = now, lease (ms), then (job id, token) per job. Extends each held lock to
-- now + lease (and re-scores the job in the active set). Returns per job {} when renewed, or
-- {kind, message} with kind "missing", "state" or "lock".
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])

local out = {}
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local refused = check(id, token)
  if refused then
    out[#out + 1] = refused
  else
    local until_text = int(now + lease)
    set("expires", id, until_text)
    redis.call("ZADD", ACTIVE, until_text, hex(num("seq", id)) .. id)
    out[#out + 1] = {}
  end
end
return out
