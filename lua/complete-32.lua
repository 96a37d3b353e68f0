-- complete_many: ARGV = now, max_events, then (job id, token, result JSON) per job. Each job is
-- checked on its own; a refused one changes nothing. Returns per job {} when completed, or
-- {kind, message} with kind "missing", "state" or "lock".
-- The batch is read and written a field at a time (one HMGET / HSET per field for all jobs),
-- so a job costs little more than its event.
local ids, tokens, results = {}, {}, {}
for i = 3, #ARGV, 3 do
  ids[#ids + 1], tokens[#tokens + 1], results[#results + 1] = ARGV[i], ARGV[i + 1], ARGV[i + 2]
end
local states, held, expires = mget("state", ids), mget("token", ids), mget("expires", ids)
local seqs, opts = mget("seq", ids), mget("opts", ids)

local out, done, seen = {}, {}, {}
local members, finished, scored = {}, {}, {}
for i, id in ipairs(ids) do
  -- A job named twice in one batch: the second sees it completed, as it would one by one.
  local state = seen[id] and tostring(COMPLETED_STATE) or states[i]
  local refused = check_values(id, tokens[i], state, held[i], expires[i])
  if refused then
    out[i] = refused
  else
    seen[id] = true
    out[i] = {}
    done[#done + 1] = i
    local member = hex(tonumber(seqs[i])) .. id
    members[#members + 1] = member
    push2(scored, NOW_TEXT, member)
    finished[#finished + 1] = id
  end
end

if #done > 0 then
  zrem(ACTIVE, members)
  mdel("token", finished); mdel("worker", finished); mdel("expires", finished)
  local state_pairs, finished_pairs, result_pairs = {}, {}, {}
  local completed = tostring(COMPLETED_STATE)
  for _, i in ipairs(done) do
    local id = ids[i]
    push2(state_pairs, id, completed)
    push2(finished_pairs, id, NOW_TEXT)
    push2(result_pairs, id, results[i])
  end
  mset("state", state_pairs); mset("finished", finished_pairs); mset("result", result_pairs)
  zadd(COMPLETED, scored)
  reserve_events(#done)
  for _, i in ipairs(done) do
    emit("completed", ids[i], "returnvalue", results[i])
  end
  for _, i in ipairs(done) do
    dedup_on_finish(ids[i], opts[i])
    -- Most jobs keep everything: skip decoding their options.
    if not string.find(opts[i], '"remove_on_complete":"keep_all"', 1, true) then
      retain(COMPLETED, cjson.decode(opts[i]).remove_on_complete, ids[i])
    end
  end
end
return out
