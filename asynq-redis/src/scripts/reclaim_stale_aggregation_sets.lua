-- reclaim_stale_aggregation_sets: puts the members of every aggregation set whose deadline has
-- passed back into their group with their scores, and deletes those sets (Go asynq's
-- reclaimStaleAggregationSets). Unlike Go, it also adds the group back to asynq:{<q>}:groups, so
-- the aggregator checks the reclaimed tasks again, and sets the group's entries in the group
-- index from the group (see group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:aggregation_sets
-- KEYS[2] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- ARGV[1] -> now, Unix seconds
-- ARGV[2] -> the group key prefix, asynq:{<q>}:g:
-- Returns: how many sets were reclaimed
local stale = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE")
for _, set_key in ipairs(stale) do
    -- asynq:{<q>}:g:<group>:<set id> -> asynq:{<q>}:g:<group> (set IDs hold no ':').
    local group_key = string.sub(set_key, 1, string.find(set_key, ":[^:]*$") - 1)
    local members = redis.call("ZRANGE", set_key, 0, -1, "WITHSCORES")
    for i = 1, #members - 1, 2 do
        redis.call("ZADD", group_key, members[i + 1], members[i])
    end
    if #members > 0 then
        local group = string.sub(group_key, #ARGV[2] + 1)
        redis.call("SADD", KEYS[2], group)
        group_index_refresh(KEYS[2], group_key, group)
    end
    redis.call("DEL", set_key)
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[1])
return #stale
