-- run_all: makes every task of a scheduled, retry or archived set, or of one group, pending
-- (Go asynq v0.26's runAll and runAllAggregating), and wakes idle Rust servers. The tasks go
-- to the back of the line in score order; as in Go, pending_since is not set and uniqueness
-- locks are kept.
--
-- KEYS[1] -> the source sorted set: asynq:{<q>}:scheduled, :retry or :archived, or
--            asynq:{<q>}:g:<group>
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:groups
-- KEYS[4] -> asynq:{<q>}:idle_workers
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> the group name when KEYS[1] is a group ("" otherwise); it leaves KEYS[3]
-- ARGV[3] -> the wake-up channel, asynq:{<q>}:ready
-- Returns: how many tasks became pending
local ids = redis.call("ZRANGE", KEYS[1], 0, -1)
for _, id in ipairs(ids) do
    redis.call("LPUSH", KEYS[2], id)
    redis.call("HSET", ARGV[1] .. id, "state", "pending")
end
redis.call("DEL", KEYS[1])
if ARGV[2] ~= "" then
    redis.call("SREM", KEYS[3], ARGV[2])
end
if #ids > 0 and redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[3], "")
end
return #ids
