-- Flows (BullMQ's FlowProducer): a parent waits in CHILDREN until its children are done. The
-- decisions are crates/lanemq-core/src/jobs/flow.rs's (on_child, release_to, retry_rejoins),
-- which the other backends use. Loaded after jobs.lua by every script that loads it (see
-- crates/lanemq-redis/src/scripts.rs): finishing, failing, removing and retrying a child
-- tell its parent in the same script.
--
-- DEPS (sorted set, every score 0) holds one member per dependency: dep_prefix(parent), then
-- its bucket (one character), then the child's key `<queue>:<id>`, so one parent's bucket is
-- one lexical range, sorted by child key. DEPS_VALUES maps dep_prefix(parent) .. child key to
-- the bucket followed by the child's return value (processed) or failure reason (failed,
-- ignored). A job's parent is `parent` ({queue, id}) in its options JSON.
local PROCESSED, UNPROCESSED, FAILED_DEP, IGNORED = "0", "1", "2", "3"
local BUCKETS = {PROCESSED, UNPROCESSED, FAILED_DEP, IGNORED}

-- This queue's name, written to META by the scripts that create flows (before them no job has
-- a parent).
local home_queue
local function home()
  if home_queue == nil then home_queue = redis.call("HGET", META, "queue") or false end
  return home_queue
end

local function dep_bucket(prefix, child_key)
  local value = redis.call("HGET", DEPS_VALUES, prefix .. child_key)
  return value and string.sub(value, 1, 1)
end

-- Puts a dependency in `bucket` (with `value`), out of the bucket it was in.
local function dep_put(prefix, child_key, bucket, value)
  local old = dep_bucket(prefix, child_key)
  if old then redis.call("ZREM", DEPS, prefix .. old .. child_key) end
  redis.call("ZADD", DEPS, 0, prefix .. bucket .. child_key)
  redis.call("HSET", DEPS_VALUES, prefix .. child_key, bucket .. (value or ""))
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

-- Applies what happened to the child `child_id` ("completed" with its return value, "failed"
-- with its reason and policy, or "removed") to its parent; true if the child was one of the
-- parent's pending dependencies (only those count: flow.rs on_child). A parent failed by its
-- child fails for good, which tells its own parent in turn.
local function flow_apply(parent, child_id, outcome, value, policy)
  if type(parent) ~= "table" or parent.queue ~= home() then return false end
  local id = parent.id
  local state = get("state", id)
  if not state then return false end
  local prefix, child_key = dep_prefix(id), parent.queue .. ":" .. child_id
  if dep_bucket(prefix, child_key) ~= UNPROCESSED then return false end
  local waiting = tonumber(state) == CHILDREN_STATE
  local release = waiting and dep_count(prefix, UNPROCESSED) == 1
  local failure
  if outcome == "completed" then
    dep_put(prefix, child_key, PROCESSED, value)
  elseif outcome == "removed" or policy == "remove_dependency_on_failure" then
    dep_drop(prefix, child_key)
  elseif policy == "ignore_dependency_on_failure" then
    dep_put(prefix, child_key, IGNORED, value)
  elseif policy == "continue_parent_on_failure" then
    dep_put(prefix, child_key, FAILED_DEP, value)
    release = waiting
  else
    dep_put(prefix, child_key, FAILED_DEP, value)
    release = false
    if waiting then failure = "child " .. child_id .. " failed: " .. value end
  end
  if not (release or failure) then return true end
  local opts_json = get("opts", id)
  local opts = cjson.decode(opts_json)
  if failure then
    redis.call("ZREM", CHILDREN, hex(num("seq", id)) .. id)
    fail_for_good(id, failure, opts, opts_json)
  else
    release_parent(id, opts)
  end
  return true
end

flow_on_finish = function(id, opts_json, outcome, value)
  local parent, policy = parent_of(opts_json)
  if parent then flow_apply(parent, id, outcome, value, policy) end
end

-- Before a finished child is retried by hand: counted again while its parent still waits for
-- its children (flow.rs retry_rejoins); otherwise it runs detached.
local function flow_on_retry(id, opts_json)
  local parent = parent_of(opts_json)
  if not parent or parent.queue ~= home() then return end
  if tonumber(get("state", parent.id)) ~= CHILDREN_STATE then return end
  dep_put(dep_prefix(parent.id), parent.queue .. ":" .. id, UNPROCESSED)
end

-------------------------------------------------------------------------------- removing
local STATE_NAMES = {[WAITING_STATE] = "waiting", [DELAYED_STATE] = "delayed",
  [ACTIVE_STATE] = "active", [CHILDREN_STATE] = "waiting_children",
  [COMPLETED_STATE] = "completed", [FAILED_STATE] = "failed"}

local function live_lock(id) return get("token", id) and num("expires", id) > NOW end

-- Unfinished children removed by this script: their parents hear of it once the removal is
-- recorded (settle_removals), as on the other backends.
local removed_children = {}

-- Deletes job `id` and the dedup key it holds, noting it if it is an unfinished child.
local function discard(id, state)
  if state ~= COMPLETED_STATE and state ~= FAILED_STATE then
    local parent = parent_of(get("opts", id))
    if parent then removed_children[#removed_children + 1] = {parent, id} end
  end
  dedup_on_removal(id)
  delete(id)
end

local function settle_removals()
  local removed = removed_children
  removed_children = {}
  for _, r in ipairs(removed) do flow_apply(r[1], r[2], "removed") end
end

-- Removes one job, refused while a live lock holds it: "ok", "missing" or "locked"; event
-- removed{prev}, then its parent hears of it.
local function remove_job(id)
  local state = tonumber(get("state", id))
  if not state then return "missing" end
  if live_lock(id) then return "locked" end
  discard(id, state)
  emit("removed", id, "prev", STATE_NAMES[state])
  settle_removals()
  return "ok"
end
