-- task_info: one task with its state, next process time and result (Go asynq's getTaskInfo).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV[1] -> the task ID
-- ARGV[2] -> now, Unix seconds
-- ARGV[3] -> the queue key prefix, asynq:{<q>}:
-- Returns: {} when the task does not exist; otherwise {msg, state, next process time in Unix
--          seconds (the score for scheduled and retry, now for pending, 0 otherwise), result or false,
--          progress (write_progress.lua's) or false, debounce key (enqueue_replacing.lua's) or
--          false, priority (priority.lua's) or false, parked (park.lua's) or false, and a flat
--          array of the `step:<name>` fields and values (record_step.lua's)}
if redis.call("EXISTS", KEYS[1]) == 0 then
    return {}
end
local fields = redis.call("HMGET", KEYS[1], "msg", "state", "result", "progress", "debounce", "priority", "parked")
local state = fields[2]
local next_at = 0
if state == "scheduled" or state == "retry" then
    next_at = redis.call("ZSCORE", ARGV[3] .. state, ARGV[1])
elseif state == "pending" then
    next_at = ARGV[2]
end
local steps = {}
for _, field in ipairs(redis.call("HKEYS", KEYS[1])) do
    if string.sub(field, 1, 5) == "step:" then
        table.insert(steps, field)
        table.insert(steps, redis.call("HGET", KEYS[1], field))
    end
end
return {fields[1], state, next_at, fields[3], fields[4], fields[5], fields[6], fields[7], steps}
