-- archive_task: archives one task that is not active (Go asynq v0.26's archiveTask, used by the
-- Inspector), trims the archive, and tells a waiting Rust client, if any. The message is not
-- modified and no counter changes; the uniqueness lock is kept. Unlike Go's Inspector script,
-- the trim deletes the hashes of the tasks it drops, as the core archive script does, so no
-- task hash is left without a container. An aggregating task's group's entries in the group
-- index are set from the group (see group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:archived
-- KEYS[3] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- KEYS[4] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> now, Unix seconds (the archive score)
-- ARGV[3] -> the age cutoff: archived tasks scored at or before it are deleted, Unix seconds
-- ARGV[4] -> the archive's size limit (10000: at most 9 999 remain after a trim)
-- ARGV[5] -> the queue key prefix, asynq:{<q>}:
-- ARGV[6] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[7] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[8] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[9] -> the event stream's cap, or "" (see events.lua)
-- Returns: {1, how many archived tasks the trim deleted past the age limit, and over the size
--          limit} done; 0 no such task; -1 the task is already archived; -2 the task is active;
--          an error reply when the task's container does not hold it (nothing written)
--          -3 the task is a workflow task waiting for others (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
local state, group = unpack(redis.call("HMGET", KEYS[1], "state", "group"))
if state == "waiting" then
    return -3
end
if state == "active" then
    return -2
elseif state == "archived" then
    return -1
end
local detach_error = detach_waiting(ARGV[1], state, group, ARGV[5], ARGV[6], KEYS[3])
if detach_error then
    return detach_error
end
if state == "aggregating" then
    group_index_refresh(KEYS[3], ARGV[6] .. group, group)
end
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
redis.call("HSET", KEYS[1], "state", "archived")
notify_waiters(KEYS[1], ARGV[8], ARGV[1])
if ARGV[9] ~= "" then
    log_event(KEYS[4], ARGV[9], "archived", ARGV[1], redis.call("HGET", KEYS[1], "msg"))
end
local by_age, by_size = trim_archive(KEYS[2], ARGV[3], ARGV[4], ARGV[7])
return {1, by_age, by_size}
