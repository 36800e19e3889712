-- queue_stats: the sizes and counters of one queue (the data of Go asynq's currentStats).
-- Prioritized tasks (priority.lua) count as pending, and the oldest pending task is the one of
-- the list's next and each priority's next that became pending first. The groups are counted
-- by group_counts (group_index.lua): in constant time past a hundred groups, from the group
-- index.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:scheduled
-- KEYS[4] -> asynq:{<q>}:retry
-- KEYS[5] -> asynq:{<q>}:archived
-- KEYS[6] -> asynq:{<q>}:completed
-- KEYS[7] -> asynq:{<q>}:processed:<today, YYYY-MM-DD>
-- KEYS[8] -> asynq:{<q>}:failed:<today, YYYY-MM-DD>
-- KEYS[9] -> asynq:{<q>}:processed
-- KEYS[10] -> asynq:{<q>}:failed
-- KEYS[11] -> asynq:{<q>}:paused
-- KEYS[12] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- KEYS[13] -> asynq:{<q>}:wf:waiting (ours; see workflow.lua)
-- KEYS[14] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> the group key prefix, asynq:{<q>}:g:
-- Returns: {pending (the list's and the prioritized set's), active, scheduled, retry, archived, completed, processed today,
--           failed today, processed total, failed total, paused (0/1),
--           pending_since of the oldest pending task in Unix nanoseconds (0 if none or unset),
--           number of groups, number of aggregating tasks (-1 - the index's count when the
--           group index is out of step with Go's set; see group_counts), number of waiting
--           workflow tasks};
--           counters are strings
local function counter(key)
    return redis.call("GET", key) or "0"
end
local oldest_since = "0"
local oldest = redis.call("LRANGE", KEYS[1], -1, -1)[1]
if oldest then
    oldest_since = redis.call("HGET", ARGV[1] .. oldest, "pending_since") or "0"
end
local prioritized = redis.call("ZCARD", KEYS[14])
if prioritized > 0 then
    -- Nanoseconds exceed a double's exact integers: compare them as strings of one length.
    local function earlier(a, b)
        return #a < #b or (#a == #b and a < b)
    end
    for _, id in ipairs(priority_heads(KEYS[14])) do
        local since = redis.call("HGET", ARGV[1] .. id, "pending_since")
        if since and since ~= "0" and string.match(since, "^%d+$")
            and (oldest_since == "0" or earlier(since, oldest_since)) then
            oldest_since = since
        end
    end
end
local groups, aggregating = group_counts(KEYS[12], ARGV[2])
return {
    redis.call("LLEN", KEYS[1]) + prioritized,
    redis.call("LLEN", KEYS[2]),
    redis.call("ZCARD", KEYS[3]),
    redis.call("ZCARD", KEYS[4]),
    redis.call("ZCARD", KEYS[5]),
    redis.call("ZCARD", KEYS[6]),
    counter(KEYS[7]),
    counter(KEYS[8]),
    counter(KEYS[9]),
    counter(KEYS[10]),
    redis.call("EXISTS", KEYS[11]),
    oldest_since,
    groups,
    aggregating,
    redis.call("ZCARD", KEYS[13]),
}
