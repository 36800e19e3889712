-- delete_all: deletes up to ARGV[6] tasks of a pending, scheduled, retry, archived or
-- completed container, or of one group (Go asynq v0.26's deleteAll, deleteAllPending and
-- deleteAllAggregating, in bounded slices: see bulk_slice.lua), releasing the uniqueness locks
-- the tasks hold (Go's pending and group forms do not), and tells waiting Rust clients, if any.
--
-- KEYS[1] -> the source: asynq:{<q>}:pending (a list), asynq:{<q>}:scheduled, :retry,
--            :archived or :completed, or asynq:{<q>}:g:<group> (sorted sets)
-- KEYS[2] -> asynq:{<q>}:groups
-- KEYS[3] -> asynq:{<q>}:prioritized (ours; see priority.lua): with "list", the pending tasks
--            it holds are deleted too, first
-- KEYS[4] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> "list" or "zset": how to read KEYS[1]
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the group name when KEYS[1] is a group ("" otherwise); it leaves KEYS[2] once empty, and
--            keeps the group index (group_index.lua)
-- ARGV[4] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[5] -> the event stream's cap, or "" (see events.lua)
-- ARGV[6] -> the most tasks to delete in this call
-- Returns: {how many tasks were deleted, how many the source still holds}
local ids = take_slice(ARGV[1], KEYS[1], KEYS[3], tonumber(ARGV[6]))
for _, id in ipairs(ids) do
    if ARGV[5] ~= "" then
        log_event(KEYS[4], ARGV[5], "deleted", id, redis.call("HGET", ARGV[2] .. id, "msg"))
    end
    delete_task_hash(ARGV[2] .. id, id, ARGV[4])
end
local left = slice_left(ARGV[1], KEYS[1], KEYS[3])
if ARGV[3] ~= "" then
    if left == 0 then
        redis.call("SREM", KEYS[2], ARGV[3])
    end
    group_index_refresh(KEYS[2], KEYS[1], ARGV[3])
end
return {#ids, left}
