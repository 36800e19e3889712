-- aggregation_check: if a group is ready to aggregate, moves the tasks to aggregate into a new
-- aggregation set, keeping their scores, and indexes the set by its deadline (Go asynq's
-- aggregationCheck). A group is ready when, in this order: it holds at least max size tasks
-- (the max size oldest are taken); its oldest task joined at least max delay ago; its newest
-- task joined at least the grace period ago (in the last two cases the whole group is taken).
-- A group the move empties is removed from asynq:{<q>}:groups. Either way the group's entries in
-- the group index are set from the group (see group_index.lua), so a group the index named as
-- possibly ready that is not stops being named until it changes.
--
-- KEYS[1] -> asynq:{<q>}:g:<group>
-- KEYS[2] -> asynq:{<q>}:g:<group>:<set id>   the new aggregation set
-- KEYS[3] -> asynq:{<q>}:aggregation_sets
-- KEYS[4] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- ARGV[1] -> the max size, 0 for no limit
-- ARGV[2] -> the max delay in whole seconds, 0 for no limit
-- ARGV[3] -> the grace period in whole seconds
-- ARGV[4] -> the set's deadline, Unix seconds (now + 2 minutes)
-- ARGV[5] -> now, Unix seconds
-- ARGV[6] -> the group name
-- Returns: 1 a set was created; 0 the group is not ready (nothing written but the index)
local size = redis.call("ZCARD", KEYS[1])
if size == 0 then
    group_index_refresh(KEYS[4], KEYS[1], ARGV[6])
    return 0
end
local max_size = tonumber(ARGV[1])
local now = tonumber(ARGV[5])

-- Moves the `n` oldest tasks of the group (all of them when n is 0) into the new set.
local function take(n)
    local taken = redis.call("ZRANGE", KEYS[1], 0, n - 1, "WITHSCORES")
    for i = 1, #taken - 1, 2 do
        redis.call("ZADD", KEYS[2], taken[i + 1], taken[i])
    end
    redis.call("ZREMRANGEBYRANK", KEYS[1], 0, n - 1)
    redis.call("ZADD", KEYS[3], ARGV[4], KEYS[2])
    if n == 0 or size <= n then
        redis.call("SREM", KEYS[4], ARGV[6])
    end
    group_index_refresh(KEYS[4], KEYS[1], ARGV[6])
    return 1
end

if max_size ~= 0 and size >= max_size then
    return take(max_size)
end
local max_delay = tonumber(ARGV[2])
if max_delay ~= 0 then
    local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
    if tonumber(oldest[2]) <= now - max_delay then
        return take(max_size)
    end
end
local newest = redis.call("ZRANGE", KEYS[1], 0, 0, "REV", "WITHSCORES")
if tonumber(newest[2]) <= now - tonumber(ARGV[3]) then
    return take(max_size)
end
group_index_refresh(KEYS[4], KEYS[1], ARGV[6])
return 0
