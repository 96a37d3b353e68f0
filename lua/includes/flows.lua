-- Flows (BullMQ's FlowProducer): a parent waits in CHILDREN until its children are done. The
-- decisions are crates/lanemq-core/src/jobs/flow.rs's (on_child, release_to, retry_rejoins),
-- which the other backends use. Loaded after jobs.lua, by every script that reaches them (see
-- crates/lanemq-redis/src/compose.rs): finishing, failing, removing and retrying a child
-- tell its parent in the same script.
--
-- DEPS (sorted set, every score 0) holds one member per dependency: dep_prefix(parent), then
-- its bucket (one character), then the child's key `<queue>:<id>`, so one parent's bucket is
-- one lexical range, sorted by child key. DEPS_VALUES maps dep_prefix(parent) .. child key to
-- the bucket, the child's queue (its length in 8 hex digits, then the name: a removal finds a
-- child in any bucket) and the child's return value (processed), failure reason (failed,
-- ignored) or nothing (unprocessed). A job's parent is `parent` ({queue, id}) in its options
-- JSON.
--
-- Flows may span queues. A parent's dependencies live in the parent's queue, so a child's
-- transition works in its parent's queue too (in_queue), in the same script: the client passes
-- the keys of each queue linked to its own after its own (a KEYS block of BLOCK keys per
-- queue, META first: bind() builds the rest). A script that
-- meets a queue whose keys it was not given fails before it writes anything, with the error
-- LANEMQ_NEED_QUEUE <queue name in hex>; the client then links that queue and runs it again
-- (crates/lanemq-redis/src/backend/call.rs). On Redis Cluster, such queues must share a slot (a
-- prefix with a hash tag, e.g. "{app}"), as BullMQ's flows require.
local PROCESSED, UNPROCESSED, FAILED_DEP, IGNORED = "0", "1", "2", "3"
local BUCKETS = {PROCESSED, UNPROCESSED, FAILED_DEP, IGNORED}

-- The name of the queue the script is working in, written to its META by the scripts that
-- create flows (before them none of its jobs has a parent).
local home_queue
local function home()
  if home_queue == nil then home_queue = redis.call("HGET", META, "queue") or false end
  return home_queue
end

-- Where each queue's block of KEYS starts (0: the script's own queue), by name. A linked
-- block's name is read off its META key, `<prefix>{<name>}:meta`, with the prefix of the own
-- META key (known once the own name is).
local block_bases
local function block_base(name)
  if block_bases == nil then
    block_bases = {}
    local own = home() -- first called working in the own queue
    if own then
      block_bases[own] = 0
      local prefix = #KEYS[1] - #own - 7
      for base = BLOCK, #KEYS - BLOCK, BLOCK do
        block_bases[string.sub(KEYS[base + 1], prefix + 2, -7)] = base
      end
    end
  end
  local base = block_bases[name]
  if base then return base end
  local hex_name = string.gsub(name, ".",
    function(c) return string.format("%02x", string.byte(c)) end)
  error(redis.error_reply("LANEMQ_NEED_QUEUE " .. hex_name))
end

-- The options JSON of job `id` of the queue whose block starts at `base` (its job hash, built
-- from that block's META as bind() does), without binding it.
local function opts_in(base, id)
  return redis.call("HGET", string.sub(KEYS[base + 1], 1, -5) .. "job:" .. id, "opts")
end

-- Runs fn(...) working in queue `name` (keys, event ids, name), then returns to where it was.
local bound_base = 0
local function in_queue(name, fn, ...)
  if name == home() then return fn(...) end
  local base = block_base(name)
  local saved_base, saved_next, saved_last, saved_home =
    bound_base, event_next, event_last, home_queue
  -- An entry of events belongs to one queue's stream: the one being built goes out first.
  flush_events()
  bind(base)
  bound_base, event_next, event_last, home_queue = base, 1, 0, name
  local result = {fn(...)}
  flush_events()
  bind(saved_base)
  bound_base, event_next, event_last, home_queue = saved_base, saved_next, saved_last, saved_home
  return unpack(result)
end

local function dep_bucket(prefix, child_key)
  local value = redis.call("HGET", DEPS_VALUES, prefix .. child_key)
  return value and string.sub(value, 1, 1)
end

-- A DEPS_VALUES value's bucket, child queue and value.
local function dep_decode(raw)
  local n = tonumber(string.sub(raw, 2, 9), 16) or 0
  return string.sub(raw, 1, 1), string.sub(raw, 10, 9 + n), string.sub(raw, 10 + n)
end

-- Puts a dependency (a child of `queue`) in `bucket` (with `value`), out of the bucket it was
-- in. A child that becomes unprocessed marks its parent's hash `kids`: only a marked job pays
-- complete_jobs' pending-children check (a ZLEXCOUNT), so a completion of a job that never had
-- a child costs no extra call. Every caller puts the dependency after the parent's hash exists.
local function dep_put(prefix, child_key, bucket, value, queue)
  local old = dep_bucket(prefix, child_key)
  if bucket == UNPROCESSED then redis.call("HSET", JOB .. string.sub(prefix, 9), "kids", "1") end
  if old then redis.call("ZREM", DEPS, prefix .. old .. child_key) end
  redis.call("ZADD", DEPS, 0, prefix .. bucket .. child_key)
  redis.call("HSET", DEPS_VALUES, prefix .. child_key,
    bucket .. string.format("%08x", #queue) .. queue .. (value or ""))
end

-- The children of `id` in `bucket` (nil: every bucket), of the queue worked in: {queue, id}
-- pairs, sorted by child key (`<queue>:<id>`, as the other backends sort them).
local function dep_children(id, bucket)
  local prefix = dep_prefix(id)
  local low, high = "[" .. prefix, "(" .. prefix .. "\255"
  if bucket then low, high = "[" .. prefix .. bucket, "(" .. prefix .. bucket .. "\255" end
  local fields = {}
  for i, m in ipairs(redis.call("ZRANGEBYLEX", DEPS, low, high)) do
    fields[i] = prefix .. string.sub(m, #prefix + 2)
  end
  local out = {}
  for i, raw in ipairs(hmget(DEPS_VALUES, fields)) do
    if raw then
      local _, queue = dep_decode(raw)
      out[#out + 1] = {queue, string.sub(fields[i], #prefix + #queue + 2),
        string.sub(fields[i], #prefix + 1)}
    end
  end
  if not bucket then table.sort(out, function(a, b) return a[3] < b[3] end) end
  return out
end

local function dep_drop(prefix, child_key)
  local old = dep_bucket(prefix, child_key)
  if not old then return end
  redis.call("ZREM", DEPS, prefix .. old .. child_key)
  redis.call("HDEL", DEPS_VALUES, prefix .. child_key)
end

local function dep_range(prefix, bucket)
  return "[" .. prefix .. bucket, "(" .. prefix .. bucket .. "\255"
end

local function dep_count(prefix, bucket)
  return redis.call("ZLEXCOUNT", DEPS, dep_range(prefix, bucket))
end

-- The parent ({queue, id}) and parent_policy of a job's options JSON, or nil (the JSON is
-- decoded only if it names a parent: inside a JSON string the quotes would be escaped).
local function parent_of(opts_json)
  if not opts_json or not string.find(opts_json, '"parent":{', 1, true) then return nil end
  local opts = cjson.decode(opts_json)
  if type(opts.parent) ~= "table" then return nil end
  return opts.parent, opts.parent_policy
end

-- Checks, before a script writes anything, that it was given the keys of every queue a
-- transition of the job with these options may reach: its parent's, its grandparent's (a
-- failed parent fails its own parent), and so on.
need_chain = function(opts_json)
  local parent, hops = parent_of(opts_json), 0
  while parent and hops < 10000 do
    local base = block_base(parent.queue)
    parent = parent_of(opts_in(base, parent.id))
    hops = hops + 1
  end
end

-- A parent whose children are done: waiting, or delayed by its own delay counted from now.
local function release_parent(id, opts)
  local seq_member = hex(num("seq", id)) .. id
  redis.call("ZREM", CHILDREN, seq_member)
  local delay = tonumber(opts.delay) or 0
  if delay > 0 then
    local due = int(NOW + delay)
    set("state", id, DELAYED_STATE)
    set("delay", id, due)
    redis.call("ZADD", DELAYED, due, seq_member)
    wake(due)
    emit("delayed", id, "delay", due)
  else
    to_waiting(id, false, opts.lifo == true)
    emit("waiting", id, "prev", "waiting-children")
  end
end

-- Deletes a job, noting it for its parent (defined with the removals below).
local discard

-- Applies what happened to the child `child_id` of `child_queue` ("completed" with its return
-- value, "failed" with its reason and policy, or "removed") to its parent; true if the child
-- was one of the parent's pending dependencies (only those count: flow.rs on_child). A parent
-- failed by its child fails for good, which tells its own parent in turn. With `hard` (a
-- drain's or clean's removal of a child of the parent's queue), a parent left with no pending
-- child is deleted instead of released (BullMQ's rule), and its parent hears of it in turn.
local function apply_in_parent(id, child_key, child_id, outcome, value, policy, child_queue,
    hard)
  local state = get("state", id)
  if not state then return false end
  local prefix = dep_prefix(id)
  if dep_bucket(prefix, child_key) ~= UNPROCESSED then return false end
  local waiting = tonumber(state) == CHILDREN_STATE
  local release = waiting and dep_count(prefix, UNPROCESSED) == 1
  local failure
  if outcome == "completed" then
    dep_put(prefix, child_key, PROCESSED, value, child_queue)
  elseif outcome == "removed" or policy == "remove_dependency_on_failure" then
    dep_drop(prefix, child_key)
  elseif policy == "keep_parent_waiting" then
    return true -- still unprocessed: the parent waits for a retry (BullMQ's default)
  elseif policy == "ignore_dependency_on_failure" then
    dep_put(prefix, child_key, IGNORED, value, child_queue)
  elseif policy == "continue_parent_on_failure" then
    -- Recorded as ignored, as BullMQ does (its ignored-failures read shows it).
    dep_put(prefix, child_key, IGNORED, value, child_queue)
    release = waiting
  else
    dep_put(prefix, child_key, FAILED_DEP, value, child_queue)
    release = false
    if waiting then failure = "child " .. child_id .. " failed: " .. value end
  end
  if not (release or failure) then return true end
  if release and hard then
    discard(id, state)
    emit("removed", id, "prev", "waiting_children")
    return true
  end
  local opts_json = opts_of(id)
  local opts = cjson.decode(opts_json)
  if failure then
    redis.call("ZREM", CHILDREN, hex(num("seq", id)) .. id)
    fail_for_good(id, failure, opts, opts_json)
  else
    release_parent(id, opts)
  end
  return true
end

-- `child_queue`: the child's queue (nil: the one worked in); `hard`: see apply_in_parent.
local function flow_apply(parent, child_id, outcome, value, policy, child_queue, hard)
  if type(parent) ~= "table" then return false end
  child_queue = child_queue or home()
  local child_key = child_queue .. ":" .. child_id
  return in_queue(parent.queue, apply_in_parent, parent.id, child_key, child_id, outcome, value,
    policy, child_queue, hard and parent.queue == child_queue)
end

-- Whether a retention deletes the job that just finished (effects.rs removes_at_once).
local function removes_at_once(retention)
  if retention == "remove_all" then return true end
  return type(retention) == "table" and type(retention.keep) == "table"
    and retention.keep.count == 0
end

flow_on_finish = function(id, opts_json, outcome, value)
  local parent, policy = parent_of(opts_json)
  if not parent then return end
  -- A child its parent would keep waiting for, removed at once by its own retention, lets go
  -- instead (BullMQ drops the removed dependency).
  if outcome == "failed" and policy == "keep_parent_waiting"
      and removes_at_once(cjson.decode(opts_json).remove_on_fail) then
    outcome = "removed"
  end
  flow_apply(parent, id, outcome, value, policy)
end

-- Before a finished child is retried by hand: counted again while its parent still waits for
-- its children (flow.rs retry_rejoins); otherwise it runs detached.
local flow_on_retry

-- A child retried by hand: its parent waits for it again if it still waits for children, or
-- if it failed because of this child (flow.rs on_retry): then its failure is undone and its
-- own parent hears of it as of a retried child.
local function rejoin(parent_id, child_key, child_id, child_queue)
  local state = tonumber(get("state", parent_id))
  if not state then return end
  local bucket = dep_bucket(dep_prefix(parent_id), child_key)
  local recorded = bucket == FAILED_DEP or bucket == IGNORED
  local reason = state == FAILED_STATE and (get("reason", parent_id) or "") or ""
  local cause = "child " .. child_id .. " failed: "
  if state == FAILED_STATE and string.sub(reason, 1, #cause) == cause then
    redis.call("ZREM", FAILED, hex(num("seq", parent_id)) .. parent_id)
    set("state", parent_id, CHILDREN_STATE)
    set("finished", parent_id, nil)
    set("reason", parent_id, nil)
    redis.call("ZADD", CHILDREN, NOW_TEXT, hex(num("seq", parent_id)) .. parent_id)
    emit("waiting-children", parent_id, "prev", "failed")
    flow_on_retry(parent_id, opts_of(parent_id))
  elseif state ~= CHILDREN_STATE and not recorded then
    return
  end
  dep_put(dep_prefix(parent_id), child_key, UNPROCESSED, nil, child_queue)
end

flow_on_retry = function(id, opts_json)
  local parent = parent_of(opts_json)
  if not parent then return end
  in_queue(parent.queue, rejoin, parent.id, home() .. ":" .. id, id, home())
end

-------------------------------------------------------------------------------- removing
local STATE_NAMES = {[WAITING_STATE] = "waiting", [DELAYED_STATE] = "delayed",
  [ACTIVE_STATE] = "active", [CHILDREN_STATE] = "waiting_children",
  [COMPLETED_STATE] = "completed", [FAILED_STATE] = "failed"}

-- Only an active job's lock is live: a completed job keeps its last `worker` and `expires`
-- (complete_jobs).
local function live_lock(id)
  local f = fields(id, LOCK_READS)
  return tonumber(f[1]) == ACTIVE_STATE and f[2] and tonumber(f[3] or "0") > NOW
end

-- Children removed by this script ({parent, id, queue}): their parents hear of it once the
-- removal is recorded (settle_removals), as on the other backends.
local removed_children = {}

-- Deletes job `id` and the dedup key it holds, noting it if it is a child (a failed child may
-- still be pending for its parent, under keep_parent_waiting).
discard = function(id, state, unlisted)
  if state ~= COMPLETED_STATE then
    local parent = parent_of(opts_of(id))
    if parent then removed_children[#removed_children + 1] = {parent, id, home()} end
  end
  dedup_on_removal(id)
  delete(id, unlisted)
end

-- The removed children's parents hear of it; `hard` for a drain or clean (apply_in_parent),
-- whose deleted parents' parents hear of it in turn.
local function settle_removals(hard)
  while #removed_children > 0 do
    local removed = removed_children
    removed_children = {}
    for _, r in ipairs(removed) do flow_apply(r[1], r[2], "removed", nil, nil, r[3], hard) end
  end
end

-- Appends the tree under job `id` of `queue` to `nodes` ({queue, id, state}, the job first,
-- its descendants in whatever queue after it, depth first, children by key); returns the
-- index in `nodes` of the first job of the tree under a live lock, if any. Only reads (a
-- queue whose keys are missing fails it first).
local function plan_tree(queue, id, nodes)
  return in_queue(queue, function()
    local state = tonumber(get("state", id))
    if not state then return nil end
    nodes[#nodes + 1] = {queue, id, state}
    if live_lock(id) then return #nodes end
    for _, child in ipairs(dep_children(id)) do
      local held = plan_tree(child[1], child[2], nodes)
      if held then return held end
    end
    return nil
  end)
end

-- Removes the planned nodes: root first, so only the root's own parent hears of it (its
-- descendants' parents are gone).
local function remove_planned(nodes)
  for _, n in ipairs(nodes) do
    in_queue(n[1], function()
      discard(n[2], n[3])
      emit("removed", n[2], "prev", STATE_NAMES[n[3]])
    end)
  end
end

-- Removes one job with its whole tree of children (as BullMQ does), refused while a live lock
-- holds a job of the tree: "ok", "missing", "locked", or "refused" with the message naming
-- the locked descendant; events removed{prev}, then the root's parent hears of it.
local function remove_job(id)
  local state = tonumber(get("state", id))
  if not state then return "missing" end
  need_chain(opts_of(id))
  local nodes = {}
  local held = plan_tree(home(), id, nodes)
  if held == 1 then return "locked" end
  if held then
    return "refused", "job " .. quoted(id) .. " cannot be removed: its descendant "
      .. quoted(nodes[held][2]) .. " is locked by a worker"
  end
  remove_planned(nodes)
  settle_removals(false)
  return "ok"
end
