-- Queue settings in META. ARGV = now, max_events, op, then by op:
--   "rate", max, duration (ms)   set the rate limit (the current window is kept)
--   "norate"                     clear the rate limit
--   "max_active", n or ""        set (or, with "", clear) the cap on active jobs
--   "wait", until (ms)           hold every claim back until then (queue.rate_limit: a later
--                                call replaces the wait; claim_jobs reads it)
--   "unlimit"                    end that wait and the current window (remove_rate_limit_key:
--                                the next claim opens a new window)
-- Loosening a limit wakes idle workers. Returns {"ok"}.
local op = ARGV[3]

if op == "rate" then
  redis.call("HSET", META, "rate_max", ARGV[4], "rate_duration", ARGV[5])
elseif op == "norate" then
  redis.call("HDEL", META, "rate_max", "rate_duration")
  wake("0")
elseif op == "wait" then
  redis.call("HSET", META, "rate_until", ARGV[4])
  -- Idle workers popping a due marker would claim at once, and find nothing: the marker says
  -- when the wait ends (as a claim it holds back does, claim_jobs).
  redis.call("ZADD", MARKER, "GT", ARGV[4], "w")
elseif op == "unlimit" then
  redis.call("HDEL", META, "rate_until", "rate_start", "rate_count")
  wake("0")
elseif op == "max_active" then
  if ARGV[4] == "" then redis.call("HDEL", META, "max_active")
  else redis.call("HSET", META, "max_active", ARGV[4]) end
  wake("0")
else
  return redis.error_reply("settings: unknown op " .. tostring(op))
end
return {"ok"}
