-- complete_many: ARGV = now, max_events, then (job id, token, result JSON) per job. See
-- complete_jobs (lua/includes/jobs.lua).
local ids, tokens, results = {}, {}, {}
for i = 3, #ARGV, 3 do
  ids[#ids + 1], tokens[#tokens + 1], results[#results + 1] = ARGV[i], ARGV[i + 1], ARGV[i + 2]
end
return complete_jobs(ids, tokens, results)
