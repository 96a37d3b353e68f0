-- Brings the queue's layout up to date (common.lua `ensure_layout`: a queue of layout "2" or
-- "3" moves its jobs' fields into job hashes, in this one call): the client calls it once,
-- when it first opens a queue whose META names an older layout (backend/ready.rs).
-- ARGV = now, max_events. Returns the layout.
ensure_layout()
return LAYOUT
