-- delete_expired_completed: deletes up to ARGV[3] completed tasks whose retention ran out
-- (Go asynq's deleteExpiredCompletedTasks).
--
-- KEYS[1] -> asynq:{<q>}:completed
-- ARGV[1] -> now, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the most tasks to delete
-- Returns: how many were deleted
local ids = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE", "LIMIT", 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
    redis.call("DEL", ARGV[2] .. id)
    redis.call("ZREM", KEYS[1], id)
end
return #ids
