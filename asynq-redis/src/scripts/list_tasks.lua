-- list_tasks: one page of the tasks of one queue in one state (Go asynq's listMessages and
-- listZSetEntries), or of one group; the broker lists aggregating tasks across groups one group
-- per call, so that no call reads every group.
--
-- KEYS[1] -> the container: asynq:{<q>}:pending or :active (lists), :scheduled, :retry,
--            :archived or :completed (sorted sets), or asynq:{<q>}:g:<group> (a sorted set)
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:prioritized (ours; see priority.lua), read with "pending"
-- ARGV[1] -> "pending", "list" or "zset": how to read KEYS[1]; "pending" reads the
--            pending list as "list" does, between the prioritized tasks above the default
--            priority and those below it, the order a dequeue takes them in
-- ARGV[2] -> the first position of the page, from 0 (oldest or lowest score first)
-- ARGV[3] -> the page size
-- ARGV[4] -> the task key prefix, asynq:{<q>}:t:
-- Returns: a flat array of {msg, result or false, score or false, lease expiry or false, progress
--          (write_progress.lua's) or false, debounce key (enqueue_replacing.lua's) or false,
--          priority (priority.lua's) or false} per task; tasks without a msg are skipped
local first, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local ids, scores = {}, {}
-- Appends up to `size` - #ids IDs of the list KEYS[1] from position `from`, next to run first.
local function list_page(from)
    local wanted = size - #ids
    if wanted <= 0 then
        return
    end
    -- The right end of a list is the oldest task, the next to run.
    local stop = -from - 1
    local start = stop - wanted + 1
    local page = redis.call("LRANGE", KEYS[1], start, stop)
    for i = #page, 1, -1 do
        ids[#ids + 1] = page[i]
    end
end
if ARGV[1] == "pending" and redis.call("EXISTS", KEYS[3]) == 1 then
    local split = "(" .. string.format("%.0f", PRIORITY_SPLIT)
    local above = redis.call("ZCOUNT", KEYS[3], "-inf", split)
    local listed = redis.call("LLEN", KEYS[1])
    local function set_page(min, max, from)
        local wanted = size - #ids
        if wanted > 0 then
            for _, id in ipairs(redis.call("ZRANGE", KEYS[3], min, max, "BYSCORE", "LIMIT", from, wanted)) do
                ids[#ids + 1] = id
            end
        end
    end
    if first < above then
        set_page("-inf", split, first)
    end
    if first + #ids < above + listed then
        list_page(math.max(first - above, 0))
    end
    set_page(split, "+inf", math.max(first - above - listed, 0))
elseif ARGV[1] == "list" or ARGV[1] == "pending" then
    list_page(first)
else
    local page = redis.call("ZRANGE", KEYS[1], first, first + size - 1, "WITHSCORES")
    for i = 1, #page, 2 do
        ids[#ids + 1] = page[i]
        scores[#ids] = page[i + 1]
    end
end
local out = {}
for i, id in ipairs(ids) do
    local fields = redis.call("HMGET", ARGV[4] .. id, "msg", "result", "progress", "debounce", "priority")
    if fields[1] then
        out[#out + 1] = fields[1]
        out[#out + 1] = fields[2]
        out[#out + 1] = scores[i] or false
        out[#out + 1] = redis.call("ZSCORE", KEYS[2], id)
        out[#out + 1] = fields[3]
        out[#out + 1] = fields[4]
        out[#out + 1] = fields[5]
    end
end
return out
