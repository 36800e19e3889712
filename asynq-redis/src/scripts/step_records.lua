-- step_records: reads the durable steps' records of a task, and only them (not its message),
-- from the `step:<name>` fields of its hash (see record_step.lua).
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
    end
end
return out
