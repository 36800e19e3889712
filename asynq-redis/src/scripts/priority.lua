-- priority: helpers prepended to the scripts that make tasks pending, for task priorities
-- within a queue (ours; Go asynq has none).
--
-- A task of the default priority, 0, waits in Go's pending list, where Go's servers take it
-- too. A task of another priority (-10 to 10, its task hash's `priority` field) waits in the
-- sorted set asynq:{<q>}:prioritized, which no script of Go's reads, scored
-- (10 - priority) * 2^48 plus a per-queue sequence (asynq:{<q>}:priority_seq, INCR): the lowest
-- score runs first, so a higher priority runs first and tasks of one priority run in the order
-- they became pending. A task given back to the queue (a requeue) is scored the sequence below
-- its priority's base instead, before the others of its priority, as Go's requeue puts a task
-- at the list's right end. A dequeue takes the set's scores below 10 * 2^48 (priorities above
-- the default) first, then the list, then the rest of the set (priorities below the default).
-- Every score is an integer below 2^53, exact in a double; the sequence starts again at 1
-- before 2^47, so that the order within a priority is lost once in 2^47 enqueues and never
-- across priorities.
--
-- KEYS -> none of its own; the functions take the keys the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions and constants only.

local PRIORITY_MAX = 10
local PRIORITY_STEP = 281474976710656 -- 2^48
local PRIORITY_WRAP = 140737488355328 -- 2^47
-- The set's scores below it are of priorities above the default.
local PRIORITY_SPLIT = PRIORITY_MAX * PRIORITY_STEP

-- The priority a task hash's `priority` field holds, as a number; nil for the default (no
-- field, "", "0", or anything that is not a priority, which a dequeue cannot order).
local function priority_of(field)
    local priority = tonumber(field)
    if not priority or priority == 0 or priority ~= math.floor(priority) or math.abs(priority) > PRIORITY_MAX then
        return nil
    end
    return priority
end

-- Makes task `id` pending among the tasks of `priority` (a number, or nil for the default):
-- after them, or before them when `front`. The default's list is `pending` (LPUSH, or RPUSH
-- when `front`); the others' set is `prioritized`, with its sequence at `sequence`. Returns
-- the length of the list after the push, or nil for a prioritized task.
local function push_pending(pending, prioritized, sequence, id, priority, front)
    if not priority then
        if front then
            return redis.call("RPUSH", pending, id)
        end
        return redis.call("LPUSH", pending, id)
    end
    local n = redis.call("INCR", sequence)
    if n >= PRIORITY_WRAP then
        redis.call("SET", sequence, 1)
        n = 1
    end
    local base = (PRIORITY_MAX - priority) * PRIORITY_STEP
    if front then
        redis.call("ZADD", prioritized, base - n, id)
    else
        redis.call("ZADD", prioritized, base + n, id)
    end
    return nil
end

-- The ID of the next task of each priority that has pending tasks in `prioritized`, highest
-- first: the oldest of each (a task given back scores up to 2^47 below its priority's base,
-- one made pending up to 2^47 above it).
local function priority_heads(prioritized)
    local heads = {}
    local from = "-inf"
    while true do
        local first = redis.call("ZRANGE", prioritized, from, "+inf", "BYSCORE", "LIMIT", 0, 1, "WITHSCORES")
        if #first == 0 then
            return heads
        end
        heads[#heads + 1] = first[1]
        local level = math.floor((tonumber(first[2]) + PRIORITY_WRAP) / PRIORITY_STEP)
        from = "(" .. string.format("%.0f", level * PRIORITY_STEP + PRIORITY_WRAP)
    end
end
