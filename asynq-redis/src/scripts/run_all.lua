-- run_all: makes up to ARGV[4] tasks of a scheduled, retry or archived set, or of one group,
-- pending (Go asynq v0.26's runAll and runAllAggregating, in bounded slices: see
-- bulk_slice.lua), and wakes idle Rust servers. The tasks go to the back of the line in score
-- order, each among the tasks of its priority (see priority.lua); as in Go, pending_since is not
-- set and uniqueness locks are kept.
--
-- KEYS[1] -> the source sorted set: asynq:{<q>}:scheduled, :retry or :archived, or
--            asynq:{<q>}:g:<group>
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:groups
-- KEYS[4] -> asynq:{<q>}:idle_workers
-- KEYS[5] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> the group name when KEYS[1] is a group ("" otherwise); it leaves KEYS[3] once empty, and
--            keeps the group index (group_index.lua)
-- ARGV[3] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[4] -> the most tasks to make pending in this call
-- Returns: {how many tasks became pending, how many the source still holds}
local ids = take_slice("zset", KEYS[1], nil, tonumber(ARGV[4]))
for _, id in ipairs(ids) do
    local key = ARGV[1] .. id
    push_pending(KEYS[2], KEYS[5], KEYS[6], id, priority_of(redis.call("HGET", key, "priority")), false)
    redis.call("HSET", key, "state", "pending")
end
local left = redis.call("ZCARD", KEYS[1])
if ARGV[2] ~= "" then
    if left == 0 then
        redis.call("SREM", KEYS[3], ARGV[2])
    end
    group_index_refresh(KEYS[3], KEYS[1], ARGV[2])
end
if #ids > 0 and redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[3], "")
end
return {#ids, left}
