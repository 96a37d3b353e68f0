-- add_bulk (and add): ARGV = now, max_events, then 7 values per job: name, data, options JSON,
-- job id ("" for an automatic one), priority, lifo (0/1), delay (ms). Every job was validated by
-- the client before this runs.
--
-- Plain jobs are created together (create_jobs); a job with dedup options is decided on its
-- own, in order, so a batch can deduplicate against itself. Only create_jobs takes ids and
-- seqs here, so the new jobs' automatic ids and seqs count up in the jobs' order. The reply is
-- {first automatic id, first seq (0 where none was taken), then k, {0, job...} for each job k
-- that created nothing (its custom id existed, or a dedup key returned its owner)}: the client
-- derives every new job's id, seq and order (`decode::added_jobs`), which saves a table per
-- job here and in the reply. A batch that would take a group past its max_size writes nothing
-- and returns {"group_full", group, max_size} (groups_room).
-- A job of no delay ("0") and default options ("{}") is read with no tonumber (two strtod in
-- Lua 5.1) and no search of its options: interned strings compare as pointers.
local specs, deduplicating, grouped = {}, false, false
for i = 3, #ARGV, 7 do
  local delay, opts = ARGV[i + 6], ARGV[i + 2]
  local spec = {name = ARGV[i], data = ARGV[i + 1], opts = opts, id = ARGV[i + 3],
    prio = ARGV[i + 4], lifo = ARGV[i + 5] == "1", delay = delay == "0" and 0 or tonumber(delay)}
  if opts ~= "{}" then
    spec.dedup = dedup_of(opts)
    deduplicating = deduplicating or spec.dedup ~= nil
    grouped = grouped or string.find(opts, '"group":"', 1, true) ~= nil
  end
  specs[#specs + 1] = spec
end

-- A group's max_size refuses the whole batch before anything is written.
if grouped then
  local full = groups_room(specs)
  if full then return full end
end

local existed, first_id, first_seq
if not deduplicating then
  -- All in one creation: the loop below, without its bookkeeping's cost (benches/history/5-10.md).
  existed, first_id, first_seq = create_jobs(specs, true)
else
  existed, first_id, first_seq = {}, 0, 0
  -- Notes the first automatic id and seq a creation took (0 where it took none).
  local function took(id, seq)
    if first_id == 0 then first_id = id end
    if first_seq == 0 then first_seq = seq end
  end
  local batch, slots = {}, {}
  local function create_batch()
    if #batch == 0 then return end
    local dups, id, seq = create_jobs(batch, true)
    took(id, seq)
    for j = 1, #batch do existed[slots[j]] = dups[j] end
    batch, slots = {}, {}
  end
  for k, spec in ipairs(specs) do
    if spec.dedup then
      create_batch()
      local result = add_deduplicated(spec, spec.dedup)
      if result[1] == 1 then
        took(spec.id == "" and tonumber(result[2]) or 0, result[3])
      else
        existed[k] = result
      end
    else
      batch[#batch + 1] = spec
      slots[#slots + 1] = k
    end
  end
  create_batch()
end

local out = {first_id, first_seq}
for k = 1, #specs do
  if existed[k] then out[#out + 1] = k; out[#out + 1] = existed[k] end
end
return out
