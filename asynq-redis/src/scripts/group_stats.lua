-- group_stats: one slice of the groups of one queue the aggregator looks at, with how many
-- tasks wait in each (Go asynq's groupStats, which reads every group in one call; this one
-- reads about ARGV[3] per call, from an SSCAN cursor, so that no call is long).
--
-- KEYS[1] -> asynq:{<q>}:groups
-- ARGV[1] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[2] -> the SSCAN cursor, "0" to start
-- ARGV[3] -> about how many groups to read (SSCAN's COUNT)
-- Returns: {the next cursor ("0" when done), then flat pairs: a group name, then the size of its
--          sorted set asynq:{<q>}:g:<group>}; SSCAN may name a group in two calls
local scanned = redis.call("SSCAN", KEYS[1], ARGV[2], "COUNT", ARGV[3])
local stats = { scanned[1] }
for _, group in ipairs(scanned[2]) do
    stats[#stats + 1] = group
    stats[#stats + 1] = redis.call("ZCARD", ARGV[1] .. group)
end
return stats
