-- add_bulk (and add): ARGV = now, max_events, then 7 values per job: name, data, options JSON,
-- job id ("" for an automatic one), priority, lifo (0/1), delay (ms). Every job was validated by
-- the client before this runs. Returns, per job, {0, job...} when its custom id existed, or
-- {1, id, seq, order} for a new job (the client knows the rest: it sent it).
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local out = {}
for i = 3, #ARGV, 7 do
  local name, data, opts, id = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local priority, lifo, delay = tonumber(ARGV[i + 4]), ARGV[i + 5] == "1", tonumber(ARGV[i + 6])
  if id ~= "" and redis.call("HEXISTS", F["state"], id) == 1 then
    emit(now, max_events, "duplicated", id)
    out[#out + 1] = {0, job(id)}
  else
    if id == "" then id = tostring(counter("id", 1)) end
    local seq = counter("seq", 1)
    for field, value in pairs({name = name, data = data, opts = opts, prio = priority, seq = seq,
        created = now, attempts = 0, stalled = 0, progress = "0", trace = "[]"}) do
      set(field, id, value)
    end
    emit(now, max_events, "added", id, "name", name)
    if delay > 0 then
      set("state", id, DELAYED_STATE)
      set("delay", id, now + delay)
      set("ord", id, seq)
      redis.call("ZADD", DELAYED, now + delay, hex(seq) .. id)
      wake(now + delay)
      emit(now, max_events, "delayed", id, "delay", tostring(now + delay))
    else
      set("delay", id, 0)
      to_waiting(id, false, lifo)
      emit(now, max_events, "waiting", id)
    end
    out[#out + 1] = {1, id, seq, get("ord", id)}
  end
end
return out
