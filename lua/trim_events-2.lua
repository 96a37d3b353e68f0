-- trim_events: ARGV = now, max_events, max_len. Keeps the newest max_len events: those with ids
-- below last + 1 - max_len go. An entry holds a call's events and is written whole (`emit`),
-- so one may straddle that bound: META `events_floor` records the bound, and readers skip
-- what is below it. Ids are never reused. Returns how many events went: those older than the
-- newest max_events, which readers no longer show (`visible_floor` in events.rs), went before.
local last = tonumber(redis.call("HGET", META, "event") or "0")
local floor = math.max(tonumber(redis.call("HGET", META, "events_floor") or "1"),
  last + 1 - MAX_EVENTS_N)
local new_floor = last + 1 - tonumber(ARGV[3])
if new_floor <= floor then return 0 end

local gone = 0
-- Entry `<id>-<n>` holds the events id - n + 1 .. id (n = 0: one event, written before a
-- call's events were gathered): those in [floor, new_floor) go.
local function count(entries)
  for _, entry in ipairs(entries) do
    local id, n = string.match(entry[1], "^(%d+)-(%d+)$")
    id, n = tonumber(id), math.max(tonumber(n), 1)
    local lo, hi = math.max(id - n + 1, floor), math.min(id, new_floor - 1)
    if hi >= lo then gone = gone + hi - lo + 1 end
  end
end
-- The entries ending below the new floor, then the first one ending at or past it.
-- (An id without its second part means -0 as a start and its largest as an end.)
count(redis.call("XRANGE", EVENTS, string.format("%d", floor), string.format("%d", new_floor - 1)))
count(redis.call("XRANGE", EVENTS, string.format("%d", new_floor), "+", "COUNT", "1"))
redis.call("XTRIM", EVENTS, "MINID", string.format("%d-0", new_floor))
redis.call("HSET", META, "events_floor", string.format("%d", new_floor))
return gone
