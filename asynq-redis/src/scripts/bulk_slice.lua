-- bulk_slice: helpers prepended to the operator scripts that act on a whole state or group in
-- bounded slices (run_all, archive_all, delete_all), so that no call blocks Redis for long
-- however many tasks the set holds. The caller calls again until nothing is left.
--
-- KEYS -> none of its own; the functions take the keys the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- Takes up to `n` task IDs out of a source and returns them. A "zset" source gives its lowest
-- scores; a "list" source (asynq:{<q>}:pending) gives the tasks of `prioritized` first (see
-- priority.lua), then the list's oldest, from its right end where Go's servers take them.
local function take_slice(kind, source, prioritized, n)
    if kind ~= "list" then
        local ids = redis.call("ZRANGE", source, 0, n - 1)
        if #ids > 0 then
            redis.call("ZREMRANGEBYRANK", source, 0, #ids - 1)
        end
        return ids
    end
    local ids = redis.call("ZRANGE", prioritized, 0, n - 1)
    if #ids > 0 then
        redis.call("ZREMRANGEBYRANK", prioritized, 0, #ids - 1)
    end
    local rest = n - #ids
    if rest > 0 then
        local oldest = redis.call("LRANGE", source, -rest, -1)
        if #oldest > 0 then
            redis.call("LTRIM", source, 0, -#oldest - 1)
            for i = #oldest, 1, -1 do
                ids[#ids + 1] = oldest[i]
            end
        end
    end
    return ids
end

-- How many tasks a source still holds (the list's and `prioritized`'s for a "list").
local function slice_left(kind, source, prioritized)
    if kind ~= "list" then
        return redis.call("ZCARD", source)
    end
    return redis.call("LLEN", source) + redis.call("ZCARD", prioritized)
end
