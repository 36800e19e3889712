-- list_tasks: one page of the tasks of one queue in one state (Go asynq's listMessages and
-- listZSetEntries; aggregating tasks are listed across all groups, by group name then score).
--
-- KEYS[1] -> the container: asynq:{<q>}:pending or :active (lists), :scheduled, :retry,
--            :archived or :completed (sorted sets), or asynq:{<q>}:groups for aggregating
-- KEYS[2] -> asynq:{<q>}:lease
-- ARGV[1] -> "list", "zset" or "groups": how to read KEYS[1]
-- ARGV[2] -> the first position of the page, from 0 (oldest or lowest score first)
-- ARGV[3] -> the page size
-- ARGV[4] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[5] -> the group key prefix, asynq:{<q>}:g:
-- Returns: a flat array of {msg, result or false, score or false, lease expiry or false, progress
--          (write_progress.lua's) or false, debounce key (enqueue_replacing.lua's) or false} per
--          task; tasks without a msg are skipped
local first, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local ids, scores = {}, {}
if ARGV[1] == "list" then
    -- The right end of a list is the oldest task, the next to run.
    local stop = -first - 1
    local start = stop - size + 1
    local page = redis.call("LRANGE", KEYS[1], start, stop)
    for i = #page, 1, -1 do
        ids[#ids + 1] = page[i]
    end
elseif ARGV[1] == "zset" then
    local page = redis.call("ZRANGE", KEYS[1], first, first + size - 1, "WITHSCORES")
    for i = 1, #page, 2 do
        ids[#ids + 1] = page[i]
        scores[#ids] = page[i + 1]
    end
else
    local groups = redis.call("SMEMBERS", KEYS[1])
    table.sort(groups)
    local position = 0
    for _, group in ipairs(groups) do
        local members = redis.call("ZRANGE", ARGV[5] .. group, 0, -1, "WITHSCORES")
        for i = 1, #members, 2 do
            if position >= first and #ids < size then
                ids[#ids + 1] = members[i]
                scores[#ids] = members[i + 1]
            end
            position = position + 1
        end
    end
end
local out = {}
for i, id in ipairs(ids) do
    local fields = redis.call("HMGET", ARGV[4] .. id, "msg", "result", "progress", "debounce")
    if fields[1] then
        out[#out + 1] = fields[1]
        out[#out + 1] = fields[2]
        out[#out + 1] = scores[i] or false
        out[#out + 1] = redis.call("ZSCORE", KEYS[2], id)
        out[#out + 1] = fields[3]
        out[#out + 1] = fields[4]
    end
end
return out
