-- update_task_payload: replaces the message of a scheduled task (Go asynq v0.26's
-- updateTaskPayload), if it is still the one the caller read and changed, and the task has not
-- started (started.lua: a handler parked it; its records were made from the message it has).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV[1] -> the new encoded TaskMessage
-- ARGV[2] -> the encoded TaskMessage the caller read and changed
-- Returns: 1 done; 0 no such task; -1 the task is not scheduled; -2 the message changed since
--          the caller read it (nothing written: read again and retry); -3 the task has started
--          (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
local state, msg = unpack(redis.call("HMGET", KEYS[1], "state", "msg"))
if state ~= "scheduled" then
    return -1
end
if msg ~= ARGV[2] then
    return -2
end
if has_started(KEYS[1], state) then
    return -3
end
redis.call("HSET", KEYS[1], "msg", ARGV[1])
return 1
