-- forward: moves up to 100 due tasks from the scheduled or retry set to pending, or to their
-- group when the task hash has one (Go asynq's forward).
--
-- KEYS[1] -> asynq:{<q>}:scheduled or asynq:{<q>}:retry
-- KEYS[2] -> asynq:{<q>}:pending
-- ARGV[1] -> now, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> now, Unix nanoseconds (pending_since)
-- ARGV[4] -> the group key prefix, asynq:{<q>}:g:
-- Returns: how many tasks moved; call again until 0
local ids = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE", "LIMIT", 0, 100)
for _, id in ipairs(ids) do
    local key = ARGV[2] .. id
    local group = redis.call("HGET", key, "group")
    if group and group ~= "" then
        redis.call("ZADD", ARGV[4] .. group, ARGV[1], id)
        redis.call("HSET", key, "state", "aggregating")
    else
        redis.call("LPUSH", KEYS[2], id)
        redis.call("HSET", key, "state", "pending", "pending_since", ARGV[3])
    end
    redis.call("ZREM", KEYS[1], id)
end
return #ids
