-- group_index: helpers prepended to the scripts that add tasks to a group or take them out of
-- one, keeping the queue's group index (ours; Go never reads or writes it) in the same step.
--
-- The index says, for each group registered in Go's set <ns>:{<q>}:groups, what the
-- aggregator needs to find the groups that may be ready without looking at every group, and
-- what operators' counts need without summing every group. Its keys are that set's name with a
-- suffix (a name Go never uses: Go's group keys are <ns>:{<q>}:g:<group>):
--   <ns>:{<q>}:groups:size    ZSET    each registered group -> how many tasks it holds (0 when
--                                     empty)
--   <ns>:{<q>}:groups:oldest  ZSET    each registered, non-empty group -> its oldest task's score
--                                     (the Unix second it joined)
--   <ns>:{<q>}:groups:newest  ZSET    each registered, non-empty group -> its newest task's score
--   <ns>:{<q>}:groups:tasks   STRING  the sum of groups:size's scores: the aggregating tasks
--   <ns>:{<q>}:groups:scan    HASH    the reconciliation's cursors (ready_groups.lua): "set" over
--                                     <ns>:{<q>}:groups, "index" over groups:size
-- Every change of an entry's size moves groups:tasks by the same amount, so the counter is the
-- sum of the sizes whatever the entries' staleness. Writers that do not keep the index (Go's
-- producers, servers and CLI) leave entries stale; ready_groups.lua reconciles them in slices.
--
-- KEYS -> none of its own; the functions take Go's set of groups, <ns>:{<q>}:groups, and
--         derive the index's keys from its name.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- Removes `group`'s entries from the index of `groups_key`.
local function group_index_forget(groups_key, group)
    local old = tonumber(redis.call("ZSCORE", groups_key .. ":size", group))
    redis.call("ZREM", groups_key .. ":oldest", group)
    redis.call("ZREM", groups_key .. ":newest", group)
    if old then
        redis.call("ZREM", groups_key .. ":size", group)
        if old ~= 0 then
            redis.call("DECRBY", groups_key .. ":tasks", old)
        end
    end
end

-- Sets `group`'s entries from its sorted set `group_key`: its size, oldest and newest score,
-- or no entries at all unless the group is registered in `groups_key`.
local function group_index_refresh(groups_key, group_key, group)
    if redis.call("SISMEMBER", groups_key, group) == 0 then
        group_index_forget(groups_key, group)
        return
    end
    local size_key = groups_key .. ":size"
    local old = tonumber(redis.call("ZSCORE", size_key, group)) or 0
    local size = redis.call("ZCARD", group_key)
    redis.call("ZADD", size_key, size, group)
    if size > 0 then
        redis.call("ZADD", groups_key .. ":oldest", redis.call("ZRANGE", group_key, 0, 0, "WITHSCORES")[2], group)
        redis.call("ZADD", groups_key .. ":newest", redis.call("ZRANGE", group_key, -1, -1, "WITHSCORES")[2], group)
    else
        redis.call("ZREM", groups_key .. ":oldest", group)
        redis.call("ZREM", groups_key .. ":newest", group)
    end
    if size ~= old then
        redis.call("INCRBY", groups_key .. ":tasks", size - old)
    end
end

-- Sets the entries of `group`, registered in `groups_key`, after `added` new tasks joined its
-- sorted set `group_key` with `score` (the Unix second they joined, the newest): what an enqueue
-- asks, in five commands for a new group and four for one already indexed. The size entry is
-- raised by `added` and checked against the set; an entry that was missing or stale (a writer
-- that does not keep the index changed the group) is set from the set instead.
local function group_index_joined(groups_key, group_key, group, score, added)
    local size_key = groups_key .. ":size"
    local indexed = tonumber(redis.call("ZINCRBY", size_key, added, group))
    local size = redis.call("ZCARD", group_key)
    if indexed ~= size then
        redis.call("ZADD", size_key, size, group)
        redis.call("INCRBY", groups_key .. ":tasks", size - indexed + added)
        redis.call("ZADD", groups_key .. ":oldest", redis.call("ZRANGE", group_key, 0, 0, "WITHSCORES")[2], group)
    else
        redis.call("INCRBY", groups_key .. ":tasks", added)
        if size == added then
            redis.call("ZADD", groups_key .. ":oldest", score, group)
        end
    end
    redis.call("ZADD", groups_key .. ":newest", "GT", score, group)
end

-- Sets `group`'s entries from its sorted set `group_key` (see group_index_refresh) unless they
-- hold its size and newest score already: what a reconciliation asks of each registered group,
-- in four reads when nothing changed behind the index's back. An oldest score left stale by a
-- writer that took the oldest tasks only makes the group be checked early.
local function group_index_reconcile(groups_key, group_key, group)
    local size = redis.call("ZCARD", group_key)
    if size == tonumber(redis.call("ZSCORE", groups_key .. ":size", group)) then
        if size == 0 then
            return
        end
        local newest = redis.call("ZRANGE", group_key, -1, -1, "WITHSCORES")[2]
        if tonumber(newest) == tonumber(redis.call("ZSCORE", groups_key .. ":newest", group)) then
            return
        end
    end
    group_index_refresh(groups_key, group_key, group)
end

-- Up to this many registered groups, operators' counts sum the groups themselves, exact
-- whoever wrote them; above it they read the index's count, in constant time.
local GROUP_COUNT_EXACT = 100

-- How many groups are registered in `groups_key`, and how many tasks they hold (the groups'
-- sorted sets are `group_prefix` .. name): summed up to GROUP_COUNT_EXACT groups, the index's
-- groups:tasks above. When the index names another number of groups than Go's set (groups a Go
-- producer or an operator added or removed), the index's count is not the truth: the tasks
-- come back as -1 - count, which the caller reads as "reconcile the index, then ask again".
local function group_counts(groups_key, group_prefix)
    local groups = redis.call("SCARD", groups_key)
    if groups <= GROUP_COUNT_EXACT then
        local tasks = 0
        for _, group in ipairs(redis.call("SMEMBERS", groups_key)) do
            tasks = tasks + redis.call("ZCARD", group_prefix .. group)
        end
        return groups, tasks
    end
    local tasks = math.max(tonumber(redis.call("GET", groups_key .. ":tasks")) or 0, 0)
    if redis.call("ZCARD", groups_key .. ":size") ~= groups then
        return groups, -1 - tasks
    end
    return groups, tasks
end
