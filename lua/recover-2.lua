-- recover_stalled: ARGV = now, max_events. Every active job whose lock expired (score <= now),
-- in expiry order, fails for good with its cancel request's reason when one is stored
-- (cancel-2.lua; no stall counted: it does not start again either way); any other counts a
-- stall and gives its attempt back, and goes to the front of its priority in waiting, or fails
-- for good once it stalled more than its max_stalled_count, or once its starts reached its
-- max_started_attempts (starts_spent). Returns {recovered ids, failed ids}.
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local STALLED_REASON = "job stalled more than allowable limit"

local recovered, failed = {}, {}
local ids = {}
for i, m in ipairs(redis.call("ZRANGEBYSCORE", ACTIVE, "-inf", int(now))) do
  ids[i] = string.sub(m, 15)
end
-- Their options in one read; a flow's jobs may reach other queues: all checked before
-- anything is written.
local options = opts_all(ids)
if home() then
  for _, opts_json in ipairs(options) do need_chain(opts_json) end
end
for i, id in ipairs(ids) do
  local opts_json = options[i]
  local opts = cjson.decode(opts_json)
  local cancel = get("cancel", id) -- (unlock drops it)
  if cancel then
    unlock(id)
    cancel_for_good(id, cancel, opts, opts_json)
    failed[#failed + 1] = id
  else
    local stalled = redis.call("HINCRBY", jkey(id), "stalled", 1)
    local attempts = math.max(num("attempts", id) - 1, 0)
    set("attempts", id, attempts)
    emit("stalled", id, "stalledCount", stalled)
    unlock(id)
    if stalled > (tonumber(opts.max_stalled_count) or 1) then
      fail_for_good(id, STALLED_REASON, opts, opts_json)
      failed[#failed + 1] = id
    elseif starts_spent(id, opts, attempts) then
      fail_for_good(id, STARTED_REASON, opts, opts_json)
      failed[#failed + 1] = id
    else
      to_waiting(id, true)
      emit("waiting", id, "prev", "stalled")
      recovered[#recovered + 1] = id
    end
  end
end
return {recovered, failed}
