-- promote: ARGV = now, max_events, job id. Makes a delayed job waiting now: the back of its
-- priority (the front when LIFO). Returns {"ok"}, or {"missing"} / {"state", state code}.
-- Without a job id: every delayed job due at now, as a claim promotes them first
-- (`promote_due`); returns {"ok", how many}.
local now, max_events, id = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not id then return {"ok", tostring(promote_due())} end

local state = get("state", id)
if not state then return {"missing"} end
if tonumber(state) ~= DELAYED_STATE then return {"state", state} end
redis.call("ZREM", DELAYED, hex(num("seq", id)) .. id)
to_waiting(id, false, cjson.decode(opts_of(id)).lifo)
emit("waiting", id, "prev", "delayed")
return {"ok"}
