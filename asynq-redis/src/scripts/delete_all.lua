-- delete_all: deletes every task of a pending, scheduled, retry, archived or completed
-- container, or of one group (Go asynq v0.26's deleteAll, deleteAllPending and
-- deleteAllAggregating), releasing the uniqueness locks the tasks hold (Go's pending and group
-- forms do not), and tells waiting Rust clients, if any.
--
-- KEYS[1] -> the source: asynq:{<q>}:pending (a list), asynq:{<q>}:scheduled, :retry,
--            :archived or :completed, or asynq:{<q>}:g:<group> (sorted sets)
-- KEYS[2] -> asynq:{<q>}:groups
-- KEYS[3] -> asynq:{<q>}:prioritized (ours; see priority.lua): with "list", the pending tasks
--            it holds are deleted too
-- KEYS[4] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> "list" or "zset": how to read KEYS[1]
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the group name when KEYS[1] is a group ("" otherwise); it leaves KEYS[2]
-- ARGV[4] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[5] -> the event stream's cap, or "" (see events.lua)
-- Returns: how many tasks were deleted
local ids
if ARGV[1] == "list" then
    ids = redis.call("ZRANGE", KEYS[3], 0, -1)
    for _, id in ipairs(redis.call("LRANGE", KEYS[1], 0, -1)) do
        ids[#ids + 1] = id
    end
    redis.call("DEL", KEYS[3])
else
    ids = redis.call("ZRANGE", KEYS[1], 0, -1)
end
for _, id in ipairs(ids) do
    if ARGV[5] ~= "" then
        log_event(KEYS[4], ARGV[5], "deleted", id, redis.call("HGET", ARGV[2] .. id, "msg"))
    end
    delete_task_hash(ARGV[2] .. id, id, ARGV[4])
end
redis.call("DEL", KEYS[1])
if ARGV[3] ~= "" then
    redis.call("SREM", KEYS[2], ARGV[3])
end
return #ids
