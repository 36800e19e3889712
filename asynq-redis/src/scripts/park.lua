-- park: a handler parks its active task (a durable sleep, or a wait for a signal): moves it to
-- the scheduled set, due at ARGV[3], charged nothing (no retry count, no counters), records why
-- in the hash field `parked` (ours, as asynq-redis/src/steps.rs encodes it; Go asynq ignores it
-- and sees a scheduled task), and records the sleep's or wait's own step record. A task that
-- waits for a signal already sent (its `signal:<name>` field is set) is made due at ARGV[4].
-- The hash's `group` field goes (a grouped task an operator ran): forward.lua, and Go's
-- forward, which read it, then make the task pending when due rather than put it back into its
-- group to be aggregated, its handler never to go on. Nothing else reads the field of a task
-- that is not aggregating; the message keeps its group.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:lease
-- KEYS[4] -> asynq:{<q>}:scheduled
-- KEYS[5] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the `parked` field's value
-- ARGV[3] -> when it is due, Unix seconds
-- ARGV[4] -> now, Unix seconds
-- ARGV[5] -> the signal's field, "signal:<name>", or "" for a sleep
-- ARGV[6] -> the step record's field, "step:<name>", or "" for none
-- ARGV[7] -> the step record's value
-- ARGV[8] -> the due-notice channel, asynq:due (published with KEYS[4] when the task is the
--            earliest due)
-- ARGV[9] -> the event stream's cap, or "" (see events.lua): a "parked" event is logged, naming
--            the signal waited for
-- Returns: 1 parked; 0 the task is not active (nothing written)
if redis.call("HGET", KEYS[1], "state") ~= "active" then
    return 0
end
if not take_active(KEYS[2], KEYS[3], ARGV[1]) then
    return 0
end
local due = ARGV[3]
if ARGV[5] ~= "" and redis.call("HEXISTS", KEYS[1], ARGV[5]) == 1 then
    due = ARGV[4]
end
redis.call("ZADD", KEYS[4], due, ARGV[1])
redis.call("HSET", KEYS[1], "state", "scheduled", "parked", ARGV[2])
redis.call("HDEL", KEYS[1], "group")
if ARGV[6] ~= "" then
    redis.call("HSET", KEYS[1], ARGV[6], ARGV[7])
end
local first = redis.call("ZRANGE", KEYS[4], 0, 0)
if first[1] == ARGV[1] then
    redis.call("PUBLISH", ARGV[8], KEYS[4])
end
if ARGV[9] ~= "" then
    local msg = redis.call("HGET", KEYS[1], "msg")
    if ARGV[5] ~= "" then
        log_event(KEYS[5], ARGV[9], "parked", ARGV[1], msg, "name", string.sub(ARGV[5], 8))
    else
        log_event(KEYS[5], ARGV[9], "parked", ARGV[1], msg)
    end
end
return 1
