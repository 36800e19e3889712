-- archive_all: archives up to ARGV[9] pending, scheduled or retry tasks, or tasks of one group
-- (Go asynq v0.26's archiveAll, archiveAllPending and archiveAllAggregating, in bounded
-- slices: see bulk_slice.lua), trims the archive, and tells waiting Rust clients, if any.
-- Messages are not modified and no counter changes; uniqueness locks are kept. Unlike Go's
-- Inspector scripts, the trim deletes the hashes of the tasks it drops, as the core archive
-- script does.
--
-- KEYS[1] -> the source: asynq:{<q>}:pending (a list), asynq:{<q>}:scheduled or :retry, or
--            asynq:{<q>}:g:<group> (sorted sets)
-- KEYS[2] -> asynq:{<q>}:archived
-- KEYS[3] -> asynq:{<q>}:groups
-- KEYS[4] -> asynq:{<q>}:prioritized (ours; see priority.lua): with "list", the pending tasks
--            it holds are archived too, first
-- KEYS[5] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> "list" or "zset": how to read KEYS[1]
-- ARGV[2] -> now, Unix seconds (the archive score)
-- ARGV[3] -> the age cutoff: archived tasks scored at or before it are deleted, Unix seconds
-- ARGV[4] -> the archive's size limit (10000: at most 9 999 remain after a trim)
-- ARGV[5] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[6] -> the group name when KEYS[1] is a group ("" otherwise); it leaves KEYS[3] once empty, and
--            keeps the group index (group_index.lua)
-- ARGV[7] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[8] -> the event stream's cap, or "" (see events.lua)
-- ARGV[9] -> the most tasks to archive in this call
-- Returns: {how many tasks were archived, how many the source still holds, how many archived
--          tasks the trim deleted past the age limit, and over the size limit}
local ids = take_slice(ARGV[1], KEYS[1], KEYS[4], tonumber(ARGV[9]))
for _, id in ipairs(ids) do
    local task_key = ARGV[5] .. id
    redis.call("ZADD", KEYS[2], ARGV[2], id)
    redis.call("HSET", task_key, "state", "archived")
    notify_waiters(task_key, ARGV[7], id)
    if ARGV[8] ~= "" then
        log_event(KEYS[5], ARGV[8], "archived", id, redis.call("HGET", task_key, "msg"))
    end
end
local left = slice_left(ARGV[1], KEYS[1], KEYS[4])
if ARGV[6] ~= "" then
    if left == 0 then
        redis.call("SREM", KEYS[3], ARGV[6])
    end
    group_index_refresh(KEYS[3], KEYS[1], ARGV[6])
end
local by_age, by_size = trim_archive(KEYS[2], ARGV[3], ARGV[4], ARGV[5])
return {#ids, left, by_age, by_size}
