-- add_bulk (and add): ARGV = now, max_events, then 7 values per job: name, data, options JSON,
-- job id ("" for an automatic one), priority, lifo (0/1), delay (ms). Every job was validated by
-- the client before this runs.
--
-- Without dedup options, the jobs are created together (create_jobs) and the reply is
-- {first automatic id, first seq, then k, {0, job...} for each job k that existed (its custom
-- id did, or an earlier job in the batch had it)}: the client derives every new job's id, seq
-- and order as create_jobs assigned them, which saves a table per job here and its reply
-- (`RedisBackend::added`). With dedup options, each such job is decided on its own, in order,
-- so a batch can deduplicate against itself, and the reply has an entry per job: {0, job...}
-- when it created nothing (its custom id existed, or a dedup key returned its owner), or
-- {1, id, seq, order}.
local specs, deduplicating = {}, false
for i = 3, #ARGV, 7 do
  local spec = {name = ARGV[i], data = ARGV[i + 1], opts = ARGV[i + 2], id = ARGV[i + 3],
    prio = ARGV[i + 4], lifo = ARGV[i + 5] == "1", delay = tonumber(ARGV[i + 6])}
  spec.dedup = dedup_of(spec.opts)
  deduplicating = deduplicating or spec.dedup ~= nil
  specs[#specs + 1] = spec
end

if not deduplicating then
  local existed, first_id, first_seq = create_jobs(specs, true)
  local out = {first_id, first_seq}
  for k = 1, #specs do
    if existed[k] then out[#out + 1] = k; out[#out + 1] = existed[k] end
  end
  return out
end

local out, batch, slots = {}, {}, {}

local function create_batch()
  if #batch == 0 then return end
  for k, result in ipairs(create_jobs(batch)) do out[slots[k]] = result end
  batch, slots = {}, {}
end

for k, spec in ipairs(specs) do
  out[k] = false
  if spec.dedup then
    create_batch()
    out[k] = add_deduplicated(spec, spec.dedup)
  else
    batch[#batch + 1] = spec
    slots[#slots + 1] = k
  end
end
create_batch()
return out
