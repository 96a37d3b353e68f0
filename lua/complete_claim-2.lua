-- complete_and_claim: ARGV = now, max_events, worker id, lease (ms), max jobs, token seed, then
-- (job id, token, result JSON) per job to complete. Completes those jobs, then claims: one
-- call where a worker would make two. Returns {completion outcomes, claimed jobs}, as
-- complete_jobs and claim_jobs (lua/includes/jobs.lua) do.
local ids, tokens, results = {}, {}, {}
for i = 7, #ARGV, 3 do
  ids[#ids + 1], tokens[#tokens + 1], results[#results + 1] = ARGV[i], ARGV[i + 1], ARGV[i + 2]
end
local outcomes = complete_jobs(ids, tokens, results)
return {outcomes, claim_jobs(ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6])}
