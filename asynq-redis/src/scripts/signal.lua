-- signal: sends a signal to a task: keeps its value in the hash field `signal:<name>` (ours; Go
-- asynq ignores it), and when the task is parked waiting for this signal (scheduled, with
-- `parked` = "signal:<until>:<name>", see park.lua) makes it pending, as run_task.lua does a
-- scheduled task, waking idle Rust servers; the `parked` field goes, as the park ended.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:scheduled
-- KEYS[4] -> asynq:{<q>}:idle_workers
-- KEYS[5] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- KEYS[7] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the signal's name
-- ARGV[3] -> its value
-- ARGV[4] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[5] -> the event stream's cap, or "" (see events.lua): a "signalled" event is logged,
--            naming the signal
-- Returns: 0 no such task (nothing written); 1 kept; 2 kept, and the waiting task made pending
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
redis.call("HSET", KEYS[1], "signal:" .. ARGV[2], ARGV[3])
if ARGV[5] ~= "" then
    log_event(KEYS[7], ARGV[5], "signalled", ARGV[1], redis.call("HGET", KEYS[1], "msg"), "name", ARGV[2])
end
local state, parked, priority = unpack(redis.call("HMGET", KEYS[1], "state", "parked", "priority"))
if state ~= "scheduled" or not parked or string.sub(parked, 1, 7) ~= "signal:" then
    return 1
end
local colon = string.find(parked, ":", 8, true)
if not colon or string.sub(parked, colon + 1) ~= ARGV[2] then
    return 1
end
if redis.call("ZREM", KEYS[3], ARGV[1]) == 0 then
    return 1
end
push_pending(KEYS[2], KEYS[5], KEYS[6], ARGV[1], priority_of(priority), false)
redis.call("HSET", KEYS[1], "state", "pending")
redis.call("HDEL", KEYS[1], "parked")
if redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[4], "")
end
return 2
