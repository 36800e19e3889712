-- ready_groups: the groups of one queue that may be ready to aggregate, read from the group
-- index (ours; see group_index.lua) instead of every group, after reconciling one slice of the
-- index with Go's set of groups.
--
-- A group may be ready when its indexed size is at least the max size, its indexed oldest score
-- at or before now minus the max delay, or its indexed newest score at or before now minus the
-- grace period: the rules of aggregation_check.lua, on the index. The check stays the judge: a
-- group named here that is not ready has its entries set from the group by the check.
--
-- The reconciliation: `slice` groups of asynq:{<q>}:groups, from a cursor kept in groups:scan,
-- have their entries set from their groups where their size or newest score differ
-- (group_index_reconcile: registering what Go's producers added), and
-- `slice` entries of groups:size, from a second cursor, are dropped when their group is no
-- longer registered (what Go's aggregator, CLI and older writers removed).
--
-- KEYS[1] -> asynq:{<q>}:groups
-- KEYS[2] -> asynq:{<q>}:groups:size     (ours; see group_index.lua)
-- KEYS[3] -> asynq:{<q>}:groups:oldest
-- KEYS[4] -> asynq:{<q>}:groups:newest
-- KEYS[5] -> asynq:{<q>}:groups:scan     the reconciliation's cursors (deleted while both are
--                                        at the start)
-- ARGV[1] -> the max size, 0 for no limit
-- ARGV[2] -> the max delay in whole seconds, 0 for no limit
-- ARGV[3] -> the grace period in whole seconds
-- ARGV[4] -> now, Unix seconds
-- ARGV[5] -> the most groups to name (0 to only reconcile)
-- ARGV[6] -> the slice: how many groups, and how many index entries, to reconcile
-- ARGV[7] -> the group key prefix, asynq:{<q>}:g:
-- Returns: {drift, set_wrapped, index_wrapped, group...}: drift 1 when the index and the set
--          count different groups after the slice (more reconciling is due), each wrapped 1 when
--          its cursor came back to the start in this call; then up to ARGV[5] group names,
--          those of the max size rule first, then the max delay's, then the grace period's
local slice = tonumber(ARGV[6])
local set_cursor = redis.call("HGET", KEYS[5], "set") or "0"
local scanned = redis.call("SSCAN", KEYS[1], set_cursor, "COUNT", slice)
for _, group in ipairs(scanned[2]) do
    group_index_reconcile(KEYS[1], ARGV[7] .. group, group)
end
local index_cursor = redis.call("HGET", KEYS[5], "index") or "0"
local indexed = redis.call("ZSCAN", KEYS[2], index_cursor, "COUNT", slice)
for i = 1, #indexed[2], 2 do
    if redis.call("SISMEMBER", KEYS[1], indexed[2][i]) == 0 then
        group_index_forget(KEYS[1], indexed[2][i])
    end
end
if scanned[1] == "0" and indexed[1] == "0" then
    -- Both cursors are back at the start: no key is left behind on a queue without groups.
    redis.call("DEL", KEYS[5])
else
    redis.call("HSET", KEYS[5], "set", scanned[1], "index", indexed[1])
end

local out = { 0, 0, 0 }
if redis.call("SCARD", KEYS[1]) ~= redis.call("ZCARD", KEYS[2]) then
    out[1] = 1
end
if scanned[1] == "0" then
    out[2] = 1
end
if indexed[1] == "0" then
    out[3] = 1
end

local limit = tonumber(ARGV[5])
local now = tonumber(ARGV[4])
local named = {}
local function name_all(groups)
    for _, group in ipairs(groups) do
        if #out - 3 >= limit then
            return
        end
        if not named[group] then
            named[group] = true
            out[#out + 1] = group
        end
    end
end
if limit > 0 then
    local max_size, max_delay = tonumber(ARGV[1]), tonumber(ARGV[2])
    if max_size ~= 0 then
        name_all(redis.call("ZRANGE", KEYS[2], max_size, "+inf", "BYSCORE", "LIMIT", 0, limit))
    end
    if max_delay ~= 0 then
        name_all(redis.call("ZRANGE", KEYS[3], "-inf", now - max_delay, "BYSCORE", "LIMIT", 0, limit))
    end
    name_all(redis.call("ZRANGE", KEYS[4], "-inf", now - tonumber(ARGV[3]), "BYSCORE", "LIMIT", 0, limit))
end
return out
