-- claim: ARGV = now, max_events, worker id, lease (ms), max jobs, token seed. See claim_jobs
-- (lua/includes/jobs.lua).
return claim_jobs(ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6])
