-- run_task: makes one task pending now, whatever waiting state it is in (Go asynq v0.26's
-- runTask), and wakes idle Rust servers. As in Go, pending_since is not set and the uniqueness
-- lock is kept. A task of a priority other than the default goes to the prioritized set, after
-- the tasks of its priority (see priority.lua). An aggregating task's group's entries in the
-- group index are set from the group (see group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- KEYS[4] -> asynq:{<q>}:idle_workers
-- KEYS[5] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the queue key prefix, asynq:{<q>}:
-- ARGV[3] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[4] -> the wake-up channel, asynq:{<q>}:ready
-- Returns: 1 done; 0 no such task; -1 the task is active; -2 the task is already pending;
--          an error reply when the task's container does not hold it (nothing written)
--          -3 the task is a workflow task waiting for others (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
local state, group, priority = unpack(redis.call("HMGET", KEYS[1], "state", "group", "priority"))
if state == "waiting" then
    return -3
end
if state == "active" then
    return -1
elseif state == "pending" then
    return -2
end
local detach_error = detach_waiting(ARGV[1], state, group, ARGV[2], ARGV[3], KEYS[3])
if detach_error then
    return detach_error
end
if state == "aggregating" then
    group_index_refresh(KEYS[3], ARGV[3] .. group, group)
end
push_pending(KEYS[2], KEYS[5], KEYS[6], ARGV[1], priority_of(priority), false)
redis.call("HSET", KEYS[1], "state", "pending")
if redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[4], "")
end
return 1
