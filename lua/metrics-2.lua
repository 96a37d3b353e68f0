-- metrics: adds per-minute counts of finished jobs to one kind's series, kept dense as a list
-- (the decisions of crates/lanemq-core/src/jobs/metrics.rs, step for step). Its KEYS are its
-- own, not the queue's block: the series' hash (`count`, the jobs ever recorded; `newest`, the
-- start of the minute of the list's first entry, in ms) and its list (per-minute counts,
-- newest first). ARGV = now, max_events (neither used), max_points, then minute, count pairs
-- sorted by minute, one per minute, checked by the client (`check_record`). Returns {"ok"}.
local MINUTE_MS = 60000
local head_key, data_key = KEYS[1], KEYS[2]
local max_points = tonumber(ARGV[3])
local newest = tonumber(redis.call("HGET", head_key, "newest") or "-1")
local len = redis.call("LLEN", data_key)
local added = 0
for i = 4, #ARGV - 1, 2 do
  local minute, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  added = added + n
  if newest < 0 or minute > newest then
    -- A newer minute: those between it and the newest become zeros (at most what the series
    -- keeps), then it is pushed in front.
    if newest >= 0 then
      local zeros = math.min((minute - newest) / MINUTE_MS - 1, max_points - 1)
      if zeros > 0 then
        local list = {}
        for z = 1, zeros do list[z] = "0" end
        chunked("LPUSH", data_key, list, 1)
        len = len + zeros
      end
    end
    redis.call("LPUSH", data_key, ARGV[i + 1])
    len = len + 1
    newest = minute
  elseif n > 0 then
    -- The newest minute or an older one: added into it while the list holds it (else the
    -- count only goes to the total).
    local at = (newest - minute) / MINUTE_MS
    if at < len then
      local was = tonumber(redis.call("LINDEX", data_key, at))
      redis.call("LSET", data_key, at, string.format("%d", was + n))
    end
  end
end
if newest < 0 then return {"ok"} end
redis.call("LTRIM", data_key, 0, max_points - 1)
redis.call("HSET", head_key, "newest", string.format("%d", newest))
if added > 0 then redis.call("HINCRBY", head_key, "count", string.format("%d", added)) end
return {"ok"}
