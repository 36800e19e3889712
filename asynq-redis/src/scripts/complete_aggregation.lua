-- complete_aggregation: enqueues the task an aggregation set was aggregated into and deletes the
-- set with its members, atomically; writes nothing when the set no longer exists (it was
-- completed, deleted, or reclaimed after its deadline) or the enqueue is refused. Go asynq
-- enqueues and deletes in two calls.
--
-- Runs after enqueue.lua and delete_aggregation_set.lua, each prepended as the body of a
-- `local function enqueue(KEYS, ARGV)` and `local function delete_set(KEYS, ARGV)` (see
-- aggregate.rs), called here with this script's own KEYS and ARGV, split.
--
-- KEYS[1..n-2] -> enqueue.lua's KEYS, for the aggregated task
-- KEYS[n-1]    -> asynq:{<q>}:g:<group>:<set id>   the aggregation set
-- KEYS[n]      -> asynq:{<q>}:aggregation_sets
-- ARGV[1..m-1] -> enqueue.lua's ARGV, for the aggregated task
-- ARGV[m]      -> the task key prefix, asynq:{<q>}:t:
-- Returns: -2 the set does not exist; otherwise enqueue.lua's reply (1 or 2 stored, 0 task ID
--          conflict, -1 duplicate unique task, -3 the lock's key is not a string), the set
--          deleted only when stored
local n, m = #KEYS, #ARGV
local set_key, sets_key = KEYS[n - 1], KEYS[n]
if not redis.call("ZSCORE", sets_key, set_key) then
    return -2
end
local reply = enqueue({unpack(KEYS, 1, n - 2)}, {unpack(ARGV, 1, m - 1)})
if reply >= 1 then
    delete_set({set_key, sets_key}, {ARGV[m]})
end
return reply
