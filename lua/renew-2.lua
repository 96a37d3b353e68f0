-- renew_many: ARGV = now, lease (ms), then (job id, token) per job. Extends each held lock to
-- now + lease (and re-scores the job in the active set). Returns per job {} when renewed,
-- {"cancel", reason} when renewed but its cancel was requested (cancel-2.lua: the road for a
-- worker that missed the push), or {kind, message} with kind "missing", "state" or "lock".
local now, lease = tonumber(ARGV[1]), ARGV[2]

local out = {}
local until_text
for i = 3, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local f = redis.call("HMGET", JOB .. id, unpack(RENEW_READS))
  local refused = check_values(id, token, f[1], f[2], f[3])
  if refused then
    out[#out + 1] = refused
  else
    until_text = until_text or int(now + tonumber(lease))
    redis.call("HSET", JOB .. id, "expires", until_text)
    redis.call("ZADD", ACTIVE, until_text, hex(tonumber(f[4] or "0")) .. id)
    if f[5] then out[#out + 1] = {"cancel", f[5]} else out[#out + 1] = {} end
  end
end
return out
