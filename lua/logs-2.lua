-- A job's log lines, a JSON array in LOGS (absent when empty): each line `[time, text]`, time
-- the call's NOW in ms, or a bare string, a line written before lines had times (kept as it
-- is: trimming moves whole elements, whatever their kind; `log_lines.rs` reads both). ARGV =
-- now, max_events, op, job id, then by op:
--   "add", line, keep     appends a line written at NOW; with keep > 0 only the newest keep
--                         lines stay.
--                         Returns {"ok", number of lines}.
--   "clear", keep         keeps only the newest keep lines (0 clears them). Returns {"ok"}.
-- A missing job returns {"missing"}.
local op, id = ARGV[3], ARGV[4]

if not get("state", id) then return {"missing"} end
local raw = redis.call("HGET", LOGS, id)
local lines = (raw and cjson.decode(raw)) or {}

-- The newest `keep` lines (all with keep = 0 when adding).
local function newest(keep)
  if keep <= 0 or #lines <= keep then return lines end
  local kept = {}
  for i = #lines - keep + 1, #lines do kept[#kept + 1] = lines[i] end
  return kept
end

if op == "add" then
  lines[#lines + 1] = {NOW, ARGV[5]}
  lines = newest(tonumber(ARGV[6]))
elseif op == "clear" then
  local keep = tonumber(ARGV[5])
  lines = (keep > 0 and newest(keep)) or {}
else
  return redis.error_reply("logs: unknown op " .. op)
end
-- cjson writes an empty table as {}, so no lines means no entry.
if #lines == 0 then redis.call("HDEL", LOGS, id)
else redis.call("HSET", LOGS, id, cjson.encode(lines)) end
return {"ok", #lines}
