-- step_records: reads the durable steps' records of a task, and only them (not its message),
-- from the `step:<name>` fields of its hash (see record_step.lua). An attempt reads them at its
-- first step, so a task that went on from a park reads them first: when the task is active, a
-- `parked` field (park.lua's) left from that park is removed here, off the dequeue path.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV: none
-- Returns: a flat array of field, value pairs; empty when the task has none or does not exist
local fields = redis.call("HKEYS", KEYS[1])
local out = {}
for _, field in ipairs(fields) do
    if string.sub(field, 1, 5) == "step:" then
        table.insert(out, field)
        table.insert(out, redis.call("HGET", KEYS[1], field))
    elseif field == "parked" and redis.call("HGET", KEYS[1], "state") == "active" then
        redis.call("HDEL", KEYS[1], "parked")
    end
end
return out
