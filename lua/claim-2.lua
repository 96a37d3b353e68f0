-- claim: ARGV = now, max_events, worker id, lease (ms), max jobs, token seed. See claim_jobs
-- (lua/includes/jobs.lua). Returns the claimed jobs.
--
-- Sent ahead, behind a blocking wait on the marker in one write (waits.rs `wait_and_claim`),
-- the claim runs the moment the wait ends, without a round trip to the client between them:
-- then ARGV[1] is "~" and the time it was sent, and ARGV[7] the call's halt token. Its `now`
-- is the later of that time and the server's clock (the wait may have lasted a second). A halt
-- key (`meta` .. ":halt:" .. token), which an interrupted waiter writes before it unblocks the
-- wait, makes it claim nothing; and since that wait may have taken the marker, a queue left
-- with waiting jobs gets it back for another worker. Returns {now, jobs...} then.
if string.byte(NOW_TEXT, 1) ~= 126 then -- "~"
  return claim_jobs(ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6])
end
local clock = redis.call("TIME")
NOW = math.max(tonumber(string.sub(NOW_TEXT, 2)),
  tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000))
NOW_TEXT = string.format("%d", NOW)
if redis.call("DEL", META .. ":halt:" .. ARGV[7]) == 1 then
  if claimable_left() then wake("0") end
  return {NOW_TEXT}
end
local claimed = claim_jobs(ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6])
table.insert(claimed, 1, NOW_TEXT)
return claimed
