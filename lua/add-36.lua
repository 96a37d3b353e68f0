-- add_bulk (and add): ARGV = now, max_events, then 7 values per job: name, data, options JSON,
-- job id ("" for an automatic one), priority, lifo (0/1), delay (ms). Every job was validated by
-- the client before this runs. Returns, per job, {0, job...} when it created nothing (its custom
-- id existed, or a dedup key returned its owner), or {1, id, seq, order} for a new job (the
-- client knows the rest: it sent it). Plain jobs are created together (create_jobs); a job with
-- dedup options is decided on its own, in order, so a batch can deduplicate against itself.
local out, batch, slots = {}, {}, {}

local function create_batch()
  if #batch == 0 then return end
  for k, result in ipairs(create_jobs(batch)) do out[slots[k]] = result end
  batch, slots = {}, {}
end

for i = 3, #ARGV, 7 do
  local spec = {name = ARGV[i], data = ARGV[i + 1], opts = ARGV[i + 2], id = ARGV[i + 3],
    prio = ARGV[i + 4], lifo = ARGV[i + 5] == "1", delay = tonumber(ARGV[i + 6])}
  local dedup = dedup_of(spec.opts)
  out[#out + 1] = false
  if dedup then
    create_batch()
    out[#out] = add_deduplicated(spec, dedup)
  else
    batch[#batch + 1] = spec
    slots[#slots + 1] = #out
  end
end
create_batch()
return out
