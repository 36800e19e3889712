-- group_stats: the groups of one queue the aggregator looks at, with how many tasks wait in
-- each (Go asynq's groupStats).
--
-- KEYS[1] -> asynq:{<q>}:groups
-- ARGV[1] -> the group key prefix, asynq:{<q>}:g:
-- Returns: flat pairs: a group name, then the size of its sorted set asynq:{<q>}:g:<group>
local stats = {}
for _, group in ipairs(redis.call("SMEMBERS", KEYS[1])) do
    stats[#stats + 1] = group
    stats[#stats + 1] = redis.call("ZCARD", ARGV[1] .. group)
end
return stats
