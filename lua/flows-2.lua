-- Flows (lua/includes/flows.lua). ARGV = now, max_events, op, then by op:
--   "add", queue, parent id, token, then 10 values per node, in preorder: its queue, name,
--       data, options JSON (without its parent), job id ("" for an automatic one), priority,
--       lifo (0/1), delay (ms), parent (the 1-based index of its parent node; 0: the given
--       parent, or none for ""), hold (0/1: it has children).
--       Adds a flow (no parent id) or, with the id and token of an active job, parks that job
--       in waiting_children (no attempt used, lock released) and adds its new children. With a
--       parent id and an empty token (an add's `parent=`), that job, waiting or delayed, moves
--       to waiting_children (one there stays) and gains the children; another state refuses
--       with {"state", code} (flow.rs takes_children), a missing job with {"missing"}. Every
--       node was validated by the client; nodes may be in other queues (whose keys follow).
--       A node whose custom id a job of its queue has is that job (lifecycle/flows/existing.rs):
--       under a parent it becomes the parent's child unless it is already, and it gains the
--       node's children it does not have (waiting for them: `hold`); a flow's root that exists
--       in this queue gets a duplicated event. Returns {"ok", entry...}: {id, seq, order} per
--       created node, {"existing", {queue, job, parent index}...} for an existing node (the job
--       and its children in preorder, as they are once written; parent index 1-based, 0 for the
--       node), {"dedup", the same} for a node deduplicated into its owner. Or it writes nothing
--       and returns the parent's refusal ({kind, message}, {"missing"}, {"state", code}), or
--       for the node at an index: {"other_parent", index, parent key} (an existing job with
--       another parent), {"cycle", index, key of the job it would go under} (its own
--       descendant), {"node_state", index, state code} (an existing job that gains children
--       but does not take them).
--   "deps", id, 4 cursors, count ("" = all)
--       A page of each bucket (processed, unprocessed, failed, ignored): {"ok", processed
--       {key, value...}, unprocessed {key...}, failed {key, reason...}, ignored {key,
--       reason...}, next cursors (-1 at the end)}, or {"missing"}.
--   "counts", id          {"ok", processed, unprocessed, failed, ignored}, or {"missing"}.
--   "detach", child id, its options JSON as the client read it, the same without parent
--       The child leaves its parent: {"ok", 1 if it was pending for it, else 0}, {"missing"},
--       or {"retry"} when its options changed since the client read them.
--   "prune", parent id    Removes every unprocessed child, with its tree, unless a live lock
--       holds a job of that tree (each leaves the parent, released once none is left):
--       {"ok", count}, or {"missing"}.
local op = ARGV[3]
local decide_dedup, create_nodes, dedup_duplicate, adopt

-- A node's options with its parent: the client sends them without one, as an automatic parent
-- id is only known here.
local function with_parent(opts_json, queue, parent_id)
  local link = '"parent":{"queue":' .. cjson.encode(queue) .. ',"id":' .. cjson.encode(parent_id)
    .. '}}'
  if opts_json == "{}" then return "{" .. link end
  return string.sub(opts_json, 1, -2) .. "," .. link
end

-- Parks the active job `id` for its children: no attempt used, lock released.
local function park(id)
  set("attempts", id, math.max(num("attempts", id) - 1, 0))
  unlock(id)
  set("state", id, CHILDREN_STATE)
  redis.call("ZADD", CHILDREN, NOW_TEXT, hex(num("seq", id)) .. id)
  emit("waiting-children", id, "prev", "active")
end

-- The job `id`, given children by an add's `parent=` (its state checked), waits for them.
local function hold(id)
  local state = tonumber(get("state", id))
  if state == CHILDREN_STATE then return end
  local prev = "delayed"
  if state == WAITING_STATE then
    waiting_remove(id)
    prev = "waiting"
  else
    redis.call("ZREM", DELAYED, hex(num("seq", id)) .. id)
  end
  set("state", id, CHILDREN_STATE)
  redis.call("ZADD", CHILDREN, NOW_TEXT, hex(num("seq", id)) .. id)
  emit("waiting-children", id, "prev", prev)
end

-- Refuses a parent that an add's `parent=` names unless it takes children (flow.rs).
local function takes_children(id)
  local state = get("state", id)
  if not state then return {"missing"} end
  state = tonumber(state)
  if state ~= WAITING_STATE and state ~= DELAYED_STATE and state ~= CHILDREN_STATE then
    return {"state", state}
  end
  return nil
end

-- The nodes of queue `queue` (in preorder) and the index of each among all nodes.
local function of_queue(nodes, queue)
  local mine, at = {}, {}
  for k, node in ipairs(nodes) do
    if node.queue == queue then
      mine[#mine + 1] = node
      at[#mine] = k
    end
  end
  return mine, at
end

-- Whether a job in `state` (a number) takes children (flow.rs takes_children).
local function takes(state)
  return state == WAITING_STATE or state == DELAYED_STATE or state == CHILDREN_STATE
end

-- The key of the job `id` of `queue`'s parent, read in that queue.
local function parent_key(queue, id)
  local parent = parent_of(in_queue(queue, opts_of, id))
  return parent and (parent.queue .. ":" .. parent.id) or nil
end

-- Whether the job `id` of `queue` is the job `at` ({queue, id}) or one of its ancestors.
local function ancestor(queue, id, at)
  local at_queue, at_id, hops = at[1], at[2], 0
  while hops < 10000 do
    if at_queue == queue and at_id == id then return true end
    local parent = parent_of(in_queue(at_queue, opts_of, at_id))
    if not parent then return false end
    at_queue, at_id, hops = parent.queue, parent.id, hops + 1
  end
  return false
end

-- Marks the nodes whose custom id a job has (`existing`: its state), as existing.rs checks
-- them: each under a parent is `attach`ed unless it is its child already (`mine`), and one
-- that gains a child (`gains`) must take children. `given` is the parent ({queue, id}) that
-- add_children or an add's parent= gives (nil for a flow). Returns a refusal, or nil and
-- whether that parent gains a child.
local function mark_existing(nodes, given)
  local given_gains = false
  for k, node in ipairs(nodes) do
    if node.id ~= "" then node.existing = tonumber(in_queue(node.queue, get, "state", node.id)) end
    local above = node.parent > 0 and nodes[node.parent] or nil
    -- The nearest existing job above ({queue, id}): this one must not be it or its ancestor.
    local anchor, up = given, above
    while up do
      if up.existing then anchor = {up.queue, up.id} break end
      up = up.parent > 0 and nodes[up.parent] or nil
    end
    if node.existing and (above or given) then
      local has = parent_key(node.queue, node.id)
      local above_key = nil
      if above and above.existing then above_key = above.queue .. ":" .. above.id
      elseif not above then above_key = given[1] .. ":" .. given[2] end
      if has and has ~= above_key then return {"other_parent", k, has} end
      node.mine = has ~= nil
      if not has then
        node.attach = true
        if anchor and ancestor(node.queue, node.id, anchor) then
          return {"cycle", k, anchor[1] .. ":" .. anchor[2]}
        end
      end
    end
    if not node.mine and (above or given) then
      if above then above.gains = true else given_gains = true end
    end
  end
  for k, node in ipairs(nodes) do
    if node.existing and node.gains and not takes(node.existing) then
      return {"node_state", k, node.existing}
    end
  end
  return nil, given_gains
end

-- Creates one queue's nodes: automatic ids from its counter, then the jobs.
local function create_in(queue, mine)
  ensure_layout()
  redis.call("HSET", META, "queue", queue)
  local autos = 0
  for _, node in ipairs(mine) do
    if node.id == "" then autos = autos + 1 end
  end
  local next_id = autos > 0 and counter("id", autos) - autos + 1 or 0
  for _, node in ipairs(mine) do
    if node.id == "" then
      node.id = tostring(next_id)
      next_id = next_id + 1
    end
  end
end

-- Decides, before anything is written, which nodes with dedup options (each in its own
-- queue's dedup space) are deduplicated into an existing job (their `owner`; the nodes under
-- them are `skipped`), as flow.rs dedup_owner does: the key is held and not replaced. A child
-- whose owner has a parent already refuses the flow: {"dedup_parent", node index, owner id,
-- the parent's key}. Children added to a job (`lineage`: the keys of that job and its
-- ancestors) refuse one of those as owner: {"dedup_cycle", node index, owner id} (create.rs
-- check_cycles).
local function decide_node(k, node, lineage)
  local key = key_read(node.dedup.id)
  if held(key) and not (tonumber(key.state) == DELAYED_STATE and node.dedup.replace) then
    node.owner = key.owner
    node.owner_state = tonumber(key.state)
    local parent = parent_of(opts_of(key.owner))
    if (node.parent > 0 or lineage) and parent then
      return {"dedup_parent", k, key.owner, parent.queue .. ":" .. parent.id}
    end
    if lineage and lineage[home_queue .. ":" .. key.owner] then
      return {"dedup_cycle", k, key.owner}
    end
  end
  return nil
end

decide_dedup = function(nodes, lineage)
  for k, node in ipairs(nodes) do
    if node.parent > 0 and (nodes[node.parent].owner or nodes[node.parent].skipped) then
      node.skipped = true
    elseif not node.existing then
      node.dedup = dedup_of(node.opts)
    end
    if node.dedup then
      local refused = in_queue(node.queue, decide_node, k, node, lineage)
      if refused then return refused end
    end
  end
  return nil
end

-- Writes one queue's nodes in preorder, as the other backends do: plain ones in batches, one
-- with dedup options on its own (created, or its owner's key updated as an add would). Each
-- created node gives {id, seq, order}; the others get their entry in `add`.
create_nodes = function(mine)
  local results, batch, slots = {}, {}, {}
  local function flush()
    if #batch == 0 then return end
    for j, result in ipairs(create_jobs(batch)) do
      results[slots[j]] = {result[2], result[3], result[4]}
    end
    batch, slots = {}, {}
  end
  for k, node in ipairs(mine) do
    if node.skipped or node.existing then
      results[k] = false
    elseif node.dedup then
      flush()
      if node.owner then
        results[k] = false
        dedup_duplicate(node)
      else
        local result = add_deduplicated(node, node.dedup)
        results[k] = {result[2], result[3], result[4]}
      end
    else
      batch[#batch + 1] = node
      slots[#slots + 1] = k
    end
  end
  flush()
  return results
end

-- What an add deduplicated into the node's owner writes (add_deduplicated's duplicate): the
-- key's expiry, a keep_last duplicate kept (without a parent: it runs on its own), events.
dedup_duplicate = function(node)
  local dedup, key = node.dedup, key_read(node.dedup.id)
  local exp = key.exp
  if dedup.extend then exp = ttl_expiry(dedup) end
  local next_job = key.next
  if node.owner_state == ACTIVE_STATE and dedup.keep_last then
    next_job = {node.name, node.data, node.raw_opts or node.opts}
  end
  key_write(dedup.id, key.owner, exp, next_job)
  local custom = cjson.decode(node.raw_opts or node.opts).job_id
  if type(custom) == "string" then
    emit("deduplicated", key.owner, "deduplicationId", dedup.id, "deduplicatedJobId", custom)
  else
    emit("deduplicated", key.owner, "deduplicationId", dedup.id)
  end
  emit("debounced", key.owner, "debounceId", dedup.id)
end

-- The owner a child was deduplicated into (or the existing job it is: `id`) becomes its
-- parent's child (its options name the parent); one that finished already is noted in
-- `finished`, to tell the parent.
adopt = function(node, finished, id)
  set("opts", id, with_parent(opts_of(id), node.parent_queue, node.parent_id))
  if node.owner_state == COMPLETED_STATE or node.owner_state == FAILED_STATE then
    finished[#finished + 1] = node
  end
end

-- Appends the existing job `id` of `queue` and its children (in every bucket, in whatever
-- queue) to `out` as {queue, job, parent index} in preorder. Only reads.
local function existing_tree(queue, id, parent, out)
  in_queue(queue, function()
    out[#out + 1] = {queue, job(id), parent}
    local me = #out
    for _, child in ipairs(dep_children(id)) do
      if in_queue(child[1], get, "state", child[2]) then
        existing_tree(child[1], child[2], me, out)
      end
    end
  end)
end

-- The keys (`<queue>:<id>`) of the job `id` of the own queue and of its ancestors, as a set.
local function lineage_of(id)
  local keys = {[home_queue .. ":" .. id] = true}
  local parent, hops = parent_of(opts_of(id)), 0
  while parent and hops < 10000 do
    keys[parent.queue .. ":" .. parent.id] = true
    parent = parent_of(opts_in(block_base(parent.queue), parent.id))
    hops = hops + 1
  end
  return keys
end

local function add(own, parent_id, token)
  home_queue = own
  local nodes, queues, order = {}, {}, {}
  for i = 7, #ARGV, 10 do
    local node = {queue = ARGV[i], name = ARGV[i + 1], data = ARGV[i + 2], opts = ARGV[i + 3],
      id = ARGV[i + 4], prio = ARGV[i + 5], lifo = ARGV[i + 6] == "1",
      delay = tonumber(ARGV[i + 7]), parent = tonumber(ARGV[i + 8]), hold = ARGV[i + 9] == "1"}
    nodes[#nodes + 1] = node
    if not queues[node.queue] then
      queues[node.queue] = true
      order[#order + 1] = node.queue
    end
  end
  -- Refusals first: the keys of every queue (LANEMQ_NEED_QUEUE), the parent's lock, a taken id.
  for _, queue in ipairs(order) do
    if queue ~= own then block_base(queue) end
  end
  if parent_id ~= "" then
    local refused
    if token == "" then
      if not get("state", parent_id) then return {"missing"} end
    else
      refused = check(parent_id, token)
    end
    if refused then return refused end
  end
  local given = parent_id ~= "" and {own, parent_id} or nil
  local refused, given_gains = mark_existing(nodes, given)
  if refused then return refused end
  if token == "" and given_gains then
    refused = takes_children(parent_id)
    if refused then return refused end
  end
  refused = decide_dedup(nodes, parent_id ~= "" and lineage_of(parent_id) or nil)
  if refused then return refused end
  -- A group's max_size refuses the whole flow ({"group_full", group, max_size}).
  for _, queue in ipairs(order) do
    local full = in_queue(queue, groups_room, (of_queue(nodes, queue)))
    if full then return full end
  end

  local root = nodes[1]
  if parent_id == "" and root.existing and root.queue == own then emit("duplicated", root.id) end
  if parent_id ~= "" then
    if token ~= "" then park(parent_id) elseif given_gains then hold(parent_id) end
  end
  for _, node in ipairs(nodes) do
    if node.existing and node.gains and not node.skipped then
      in_queue(node.queue, hold, node.id)
    end
  end
  -- Every node takes its automatic id, even one not written (as the other backends do).
  for _, queue in ipairs(order) do in_queue(queue, create_in, queue, (of_queue(nodes, queue))) end
  for _, node in ipairs(nodes) do
    local parent_queue = own
    if node.parent > 0 then
      local parent = nodes[node.parent]
      node.parent_id, parent_queue = parent.owner or parent.id, parent.queue
    elseif parent_id ~= "" then
      node.parent_id = parent_id
    end
    if node.parent_id then
      node.parent_queue = parent_queue
      node.raw_opts = node.opts
      node.opts = with_parent(node.opts, parent_queue, node.parent_id)
    end
  end
  local out = {}
  for _, queue in ipairs(order) do
    local mine, at = of_queue(nodes, queue)
    local results = in_queue(queue, create_nodes, mine)
    for k, result in ipairs(results) do out[at[k]] = result end
  end
  local finished = {}
  for _, node in ipairs(nodes) do
    if node.existing then
      if node.attach and not node.skipped then
        node.owner_state = node.existing
        in_queue(node.queue, adopt, node, finished, node.id)
        in_queue(node.parent_queue, dep_put, dep_prefix(node.parent_id),
          node.queue .. ":" .. node.id, UNPROCESSED, nil, node.queue)
      end
    elseif node.parent_id and not node.skipped then
      local id = node.owner or node.id
      if node.owner then in_queue(node.queue, adopt, node, finished, id) end
      in_queue(node.parent_queue, dep_put, dep_prefix(node.parent_id),
        node.queue .. ":" .. id, UNPROCESSED, nil, node.queue)
    end
  end
  -- Finished owners tell their new parents, once every node is written.
  for _, node in ipairs(finished) do
    local id = node.owner or node.id
    in_queue(node.queue, function()
      local state = tonumber(get("state", id))
      if state == COMPLETED_STATE then
        flow_on_finish(id, opts_of(id), "completed", get("result", id))
      else
        flow_on_finish(id, opts_of(id), "failed", get("reason", id))
      end
    end)
  end
  -- A job parked by add_children whose children were all its own already (and done) has
  -- nothing to wait for (dependencies.rs release_if_done).
  if token ~= "" and tonumber(get("state", parent_id)) == CHILDREN_STATE
    and dep_count(dep_prefix(parent_id), UNPROCESSED) == 0 then
    release_parent(parent_id, cjson.decode(opts_of(parent_id)))
  end
  -- An existing node or an owner is the job with its children as they are now; nodes not
  -- written (under a deduplicated node) have no entry.
  local compact = {}
  for k, node in ipairs(nodes) do
    if node.existing or node.owner then
      local kind = node.existing and "existing" or "dedup"
      out[k] = {kind, {}}
      in_queue(node.queue, existing_tree, node.queue, node.owner or node.id, 0, out[k][2])
    end
    if not node.skipped then compact[#compact + 1] = out[k] end
  end
  return {"ok", compact}
end

-- One page of a bucket: the child keys (with their values) and the next cursor (-1: none).
local function page(prefix, bucket, cursor, count, with_values)
  local low, high = dep_range(prefix, bucket)
  local members = redis.call("ZRANGEBYLEX", DEPS, low, high, "LIMIT", cursor,
    count and count + 1 or -1)
  local next_cursor = -1
  if count and #members > count then
    members[#members] = nil
    next_cursor = cursor + count
  end
  local keys, fields = {}, {}
  for i, m in ipairs(members) do
    keys[i] = string.sub(m, #prefix + 2)
    fields[i] = prefix .. keys[i]
  end
  if not with_values then return keys, next_cursor end
  local out = {}
  for i, raw in ipairs(hmget(DEPS_VALUES, fields)) do
    local _, _, value = dep_decode(raw or "")
    push2(out, keys[i], value)
  end
  return out, next_cursor
end

if op == "add" then
  return add(ARGV[4], ARGV[5], ARGV[6])
end

local id = ARGV[4]
if not get("state", id) then return {"missing"} end
local prefix = dep_prefix(id)

if op == "deps" then
  local count = tonumber(ARGV[9])
  local out, cursors = {"ok"}, {}
  for b, bucket in ipairs(BUCKETS) do
    out[b + 1], cursors[b] = page(prefix, bucket, tonumber(ARGV[4 + b]), count,
      bucket ~= UNPROCESSED)
  end
  out[6] = cursors
  return out
elseif op == "counts" then
  local out = {"ok"}
  for b, bucket in ipairs(BUCKETS) do out[b + 1] = dep_count(prefix, bucket) end
  return out
elseif op == "detach" then
  if opts_of(id) ~= ARGV[5] then return {"retry"} end
  need_chain(ARGV[5])
  set("opts", id, ARGV[6])
  local parent = parent_of(ARGV[5])
  return {"ok", flow_apply(parent, id, "removed") and 1 or 0}
elseif op == "prune" then
  -- Each child is removed in its own queue with its tree, unless a live lock holds a job of
  -- it; every tree is read (and the keys of its queues checked) before anything is written.
  local plans = {}
  for _, child in ipairs(dep_children(id, UNPROCESSED)) do
    need_chain(in_queue(child[1], opts_of, child[2]))
    local nodes = {}
    if not plan_tree(child[1], child[2], nodes) and #nodes > 0 then plans[#plans + 1] = nodes end
  end
  for _, nodes in ipairs(plans) do remove_planned(nodes) end
  settle_removals(false)
  return {"ok", #plans}
end
return redis.error_reply("flows: unknown op " .. tostring(op))
