-- forward: moves up to 100 due tasks from the scheduled or retry set to pending, or to their
-- group when the task hash has one (Go asynq's forward), and wakes idle Rust servers when a
-- task became pending. A task of a priority other than the default goes to the prioritized
-- set, after the tasks of its priority (see priority.lua); one HMGET reads both fields, so a
-- task without a priority costs what it did. A task forwarded into a group registered in
-- asynq:{<q>}:groups sets the group's entries in the group index (see group_index.lua); one
-- forwarded into an unregistered group is left out of it, as Go leaves the group out of the set.
--
-- KEYS[1] -> asynq:{<q>}:scheduled or asynq:{<q>}:retry
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:idle_workers
-- KEYS[4] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[5] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:groups (read only; its name prefixes the group index's keys)
-- ARGV[1] -> now, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> now, Unix nanoseconds (pending_since)
-- ARGV[4] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[5] -> the wake-up channel, asynq:{<q>}:ready
-- Returns: {moved, next}: how many tasks moved (call again while it is 100), and the score of
--          the earliest task left in KEYS[1] (Unix seconds), or false when none is left
local ids = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE", "LIMIT", 0, 100)
local to_pending = 0
for _, id in ipairs(ids) do
    local key = ARGV[2] .. id
    local group, priority = unpack(redis.call("HMGET", key, "group", "priority"))
    if group and group ~= "" then
        redis.call("ZADD", ARGV[4] .. group, ARGV[1], id)
        redis.call("HSET", key, "state", "aggregating")
        group_index_refresh(KEYS[6], ARGV[4] .. group, group)
    else
        push_pending(KEYS[2], KEYS[4], KEYS[5], id, priority_of(priority), false)
        redis.call("HSET", key, "state", "pending", "pending_since", ARGV[3])
        to_pending = to_pending + 1
    end
    redis.call("ZREM", KEYS[1], id)
end
if to_pending > 0 and redis.call("DEL", KEYS[3]) == 1 then
    redis.call("PUBLISH", ARGV[5], "")
end
local next = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2]
return {#ids, next or false}
