-- Queue settings in META. ARGV = now, max_events, op, then by op:
--   "rate", max, duration (ms)   set the rate limit (the current window is kept)
--   "norate"                     clear the rate limit
--   "max_active", n or ""        set (or, with "", clear) the cap on active jobs
-- Loosening a limit wakes idle workers. Returns {"ok"}.
local op = ARGV[3]

if op == "rate" then
  redis.call("HSET", META, "rate_max", ARGV[4], "rate_duration", ARGV[5])
elseif op == "norate" then
  redis.call("HDEL", META, "rate_max", "rate_duration")
  wake("0")
elseif op == "max_active" then
  if ARGV[4] == "" then redis.call("HDEL", META, "max_active")
  else redis.call("HSET", META, "max_active", ARGV[4]) end
  wake("0")
else
  return redis.error_reply("settings: unknown op " .. tostring(op))
end
return {"ok"}
