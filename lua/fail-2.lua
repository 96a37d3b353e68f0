-- fail_many: ARGV = now, max_events, then 8 values per job: id, token, error, has stacktrace
-- (0/1), stacktrace, retry (0/1), delay override (ms, "" for none), random (0..1, drives the
-- backoff jitter: scripts must be deterministic, so the client draws it). Each job is checked
-- on its own; a refused one changes nothing. Returns per job {"retry", delay until} (delayed),
-- {"retry"} (back of waiting, behind the delayed jobs already due), {"failed"} (failed for good), or {kind, message} with kind
-- "missing", "state" or "lock". A job whose cancel was requested (cancel-2.lua) is not
-- retried; one whose starts reached its max_started_attempts fails for good with
-- STARTED_REASON rather than retry (starts_spent).
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local REPORT_READS = {"token", "reason", "delay"}
-- The lock check's fields and a cancel request stored with the job (cancel-2.lua), in one read.
local FAIL_READS = {"state", "token", "expires", "cancel"}

-- Backoff::delay_for: the wait before retry number `retry` (1-based).
local function backoff_delay(backoff, retry, random)
  local base = tonumber(backoff.delay) or 0
  if backoff.kind == "exponential" then
    base = base * 2 ^ math.min(math.max(retry - 1, 0), 52)
  end
  local jitter = backoff.jitter
  if jitter == nil or jitter == cjson.null then jitter = 0 end
  local jittered = base * (1 - jitter * math.min(math.max(random, 0), 1))
  return math.floor(math.min(jittered, 9223372036854775807) + 0.5)
end

-- Every job's options in one read; a flow's jobs may reach other queues: all checked before
-- anything is written.
local ids = {}
for i = 3, #ARGV, 8 do ids[#ids + 1] = ARGV[i] end
local options = opts_all(ids)
if home() then
  for _, opts_json in ipairs(options) do need_chain(opts_json) end
end

local out = {}
for i = 3, #ARGV, 8 do
  local id, token, reason = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local has_trace, trace, retry = ARGV[i + 3] == "1", ARGV[i + 4], ARGV[i + 5] == "1"
  local override, random = tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7])
  local lock = redis.call("HMGET", JOB .. id, unpack(FAIL_READS))
  local refused = check_values(id, token, lock[1], lock[2], lock[3])
  if refused and refused[1] == "state" then
    -- This very failure sent again (its reply lost): the job keeps the token of the report
    -- that moved it (Job::reported_by), so while it is where that left it, its outcome.
    local done = fields(id, REPORT_READS)
    -- (A retry that max_started_attempts refused failed it with STARTED_REASON instead.)
    if done[1] == token and (done[2] == reason or done[2] == STARTED_REASON) then
      local state = refused[2]
      if state == FAILED_TEXT then refused = {"failed"}
      elseif state == DELAYED_TEXT then refused = {"retry", done[3]}
      elseif state == WAITING_TEXT then refused = {"retry"} end
    end
  end
  if refused then
    out[#out + 1] = refused
  else
    local opts_json = options[(i - 3) / 8 + 1]
    local opts = cjson.decode(opts_json)
    set("reason", id, reason)
    if has_trace then push_trace(id, trace, opts) end
    local attempts = num("attempts", id)
    -- Unlocked, keeping the token: this report's, told apart if it is sent again. A cancel
    -- request stored with the job goes with its leaving active.
    redis.call("ZREM", ACTIVE, hex(num("seq", id)) .. id)
    redis.call("HDEL", JOB .. id, "worker", "expires", "cancel")
    local group = group_of(opts_json)
    if group then group_active_done(group) end
    -- A failure of an attempt whose cancel was requested is one for good.
    local retries = retry and not lock[4] and attempts < (tonumber(opts.attempts) or 1)
    if retries and starts_spent(id, opts, attempts) then
      fail_for_good(id, STARTED_REASON, opts, opts_json, true)
      out[#out + 1] = {"failed"}
    elseif retries then
      local wait = override
      if wait == nil and type(opts.backoff) == "table" then
        wait = backoff_delay(opts.backoff, attempts, random)
      end
      wait = wait or 0
      if wait > 0 then
        local due = now + wait
        set("state", id, DELAYED_STATE)
        set("delay", id, int(due))
        redis.call("ZADD", DELAYED, int(due), hex(num("seq", id)) .. id)
        wake(int(due))
        emit("delayed", id, "delay", int(due))
        out[#out + 1] = {"retry", int(due)}
      else
        -- As BullMQ's retryJob: the delayed jobs already due go first, and the job comes
        -- from active (lifecycle::finish::fail).
        promote_due()
        to_waiting(id, false, opts.lifo == true)
        emit("waiting", id, "prev", "active")
        out[#out + 1] = {"retry"}
      end
    else
      fail_for_good(id, reason, opts, opts_json, true)
      out[#out + 1] = {"failed"}
    end
  end
end
return out
