-- delete_task: deletes one task that is not active (Go asynq v0.26's deleteTask), releasing
-- its uniqueness lock if it holds it (also a grouped task's, whose lock Go records only in the
-- message and does not release), and tells a waiting Rust client, if any. An aggregating task's
-- group's entries in the group index are set from the group (see group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- KEYS[3] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the queue key prefix, asynq:{<q>}:
-- ARGV[3] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[4] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[5] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 no such task; -1 the task is active; an error reply when the task's
--          container does not hold it (nothing written)
--          -3 the task is a workflow task waiting for others (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
local state, group = unpack(redis.call("HMGET", KEYS[1], "state", "group"))
if state == "waiting" then
    return -3
end
if state == "active" then
    return -1
end
local detach_error = detach_waiting(ARGV[1], state, group, ARGV[2], ARGV[3], KEYS[2])
if detach_error then
    return detach_error
end
if state == "aggregating" then
    group_index_refresh(KEYS[2], ARGV[3] .. group, group)
end
if ARGV[5] ~= "" then
    log_event(KEYS[3], ARGV[5], "deleted", ARGV[1], redis.call("HGET", KEYS[1], "msg"))
end
return delete_task_hash(KEYS[1], ARGV[1], ARGV[4])
