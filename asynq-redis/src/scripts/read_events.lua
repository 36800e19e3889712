-- read_events: reads a queue's task events from a position (ours; Go asynq has no event log),
-- and tells whether events after that position were trimmed before this read.
--
-- KEYS[1] -> <ns>:{<q>}:events   the event stream
-- ARGV[1] -> where to start: "-" at the oldest event kept; "(<id>" after event <id>; "$" after
--            the newest (nothing is read)
-- ARGV[2] -> the most events to return (0 returns none, with missed and newest still told)
-- Returns: {missed, newest, entries}: missed is 1 when reading after an ID older than the oldest
--          event kept, which the reader read, so it was trimmed since, and maybe events after
--          it (trimming keeps no record of which), else 0; newest the newest event's ID, or ""
--          for an empty stream; entries as XRANGE gives them
if redis.call("EXISTS", KEYS[1]) == 0 then
    return {0, "", {}}
end
local info = redis.call("XINFO", "STREAM", KEYS[1])
local newest, oldest = "", nil
for i = 1, #info, 2 do
    if info[i] == "last-generated-id" then
        newest = info[i + 1]
    elseif info[i] == "first-entry" and type(info[i + 1]) == "table" then
        oldest = info[i + 1][1]
    end
end
if ARGV[1] == "$" then
    return {0, newest, {}}
end

-- Whether stream ID `a` is above stream ID `b` (both "<millis>-<seq>").
local function above(a, b)
    local a_ms, a_seq = string.match(a, "^(%d+)-(%d+)$")
    local b_ms, b_seq = string.match(b, "^(%d+)-(%d+)$")
    if not a_ms or not b_ms then
        return false
    end
    a_ms, b_ms = tonumber(a_ms), tonumber(b_ms)
    return a_ms > b_ms or (a_ms == b_ms and tonumber(a_seq) > tonumber(b_seq))
end

local missed = 0
if oldest and string.sub(ARGV[1], 1, 1) == "(" and above(oldest, string.sub(ARGV[1], 2)) then
    missed = 1
end
if ARGV[2] == "0" then
    return {missed, newest, {}}
end
return {missed, newest, redis.call("XRANGE", KEYS[1], ARGV[1], "+", "COUNT", ARGV[2])}
