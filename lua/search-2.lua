-- search: ARGV = now, max_events, cursor, count, scan limit, ascending ("1"/"0"), the state
-- codes (comma-separated, each once, in list_jobs's order), then the criteria: a flag ("1"/"0")
-- and the name; a flag and the text (an id prefix or a part of the name); the cutoff of
-- older_than and of newer_than (ms, "" when not given: a job's time, its finish when it has
-- one, else its creation, must be <= the first and > the second); then pairs of a dotted data
-- path and the JSON scalar it must equal. The rules of `JobFilter` (crates/lanemq-core/src/
-- jobs/search.rs). Reads at most `scan limit` jobs from position `cursor` of the states'
-- orders and returns {the position where it stopped ("" at the end), the ids found...}.
local cursor, count, limit = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ascending = ARGV[6] == "1"
local name = ARGV[8] == "1" and ARGV[9] or nil
local text = ARGV[10] == "1" and ARGV[11] or nil
local older, newer = tonumber(ARGV[12]), tonumber(ARGV[13])
local paths = {}
for i = 14, #ARGV, 2 do
  local segments = {}
  for segment in string.gmatch(ARGV[i], "[^.]+") do segments[#segments + 1] = segment end
  paths[#paths + 1] = {segments, cjson.decode(ARGV[i + 1])}
end
local CHUNK_READ = 100

local function state_size(code)
  if code == WAITING_STATE then
    return redis.call("LLEN", WAITING0) + redis.call("ZCARD", WAITING)
  elseif code == ACTIVE_STATE then
    return redis.call("ZCOUNT", ACTIVE, "-inf", "(+inf") -- not its sentinel
  end
  local sets = {[DELAYED_STATE] = DELAYED, [CHILDREN_STATE] = CHILDREN,
    [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}
  return redis.call("ZCARD", sets[code])
end

-- Members of ranks first..last (ascending order) of the state: waiting is its list of priority
-- 0 and then its sorted set, as claims take them.
local function state_range(code, first, last)
  if code == WAITING_STATE then
    local listed = redis.call("LLEN", WAITING0)
    local out = {}
    if first < listed then
      out = redis.call("LRANGE", WAITING0, first, math.min(last, listed - 1))
    end
    if last >= listed then
      local scored = redis.call("ZRANGE", WAITING, math.max(first - listed, 0), last - listed)
      for _, m in ipairs(scored) do out[#out + 1] = m end
    end
    return out
  end
  local sets = {[DELAYED_STATE] = DELAYED, [ACTIVE_STATE] = ACTIVE,
    [CHILDREN_STATE] = CHILDREN, [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}
  return redis.call("ZRANGE", sets[code], first, last)
end

-- The value at a dotted path: a segment is an object's key or, in a list, an index from 0.
local function at_path(value, segments)
  for _, segment in ipairs(segments) do
    if type(value) ~= "table" then return nil end
    local found = value[segment]
    if found == nil and string.match(segment, "^%d+$") then
      found = value[tonumber(segment) + 1]
    end
    value = found
  end
  return value
end

-- (The data, which may be large, is read only for a job the other criteria let through.)
local function meets(id)
  local f = redis.call("HMGET", JOB .. id, "name", "created", "finished", "state")
  if not f[4] then return false end
  local job_name = f[1] or ""
  if name and job_name ~= name then return false end
  if text and string.sub(id, 1, #text) ~= text and not string.find(job_name, text, 1, true) then
    return false
  end
  local at = tonumber(f[3] or f[2]) or 0
  if older and at > older then return false end
  if newer and at <= newer then return false end
  if #paths == 0 then return true end
  local ok, data = pcall(cjson.decode, redis.call("HGET", JOB .. id, "data") or "null")
  if not ok then return false end
  for _, pair in ipairs(paths) do
    local found = at_path(data, pair[1])
    if found == nil or type(found) == "table" or found ~= pair[2] then return false end
  end
  return true
end

local found, scanned, position, offset = {}, 0, cursor, 0
for code_text in string.gmatch(ARGV[7], "[^,]+") do
  local code = tonumber(code_text)
  local size = state_size(code)
  while position < offset + size do
    if scanned == limit then return {tostring(position), unpack(found)} end
    local take = math.min(CHUNK_READ, limit - scanned, offset + size - position)
    local from = position - offset
    local first, last = from, from + take - 1
    if not ascending then first, last = size - 1 - last, size - 1 - from end
    local members = state_range(code, first, last)
    if #members == 0 then break end
    local step_from, step_to, step = 1, #members, 1
    if not ascending then step_from, step_to, step = #members, 1, -1 end
    for i = step_from, step_to, step do
      if #found == count then return {tostring(position), unpack(found)} end
      position = position + 1
      scanned = scanned + 1
      -- Every member holds 14 characters of order or sequence before the id.
      local id = string.sub(members[i], 15)
      if meets(id) then found[#found + 1] = id end
    end
  end
  offset = offset + size
  if position < offset then position = offset end
end
return {"", unpack(found)}
