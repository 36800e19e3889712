-- started: whether a waiting task has started, prepended to the scripts that replace or edit a
-- waiting task. A task has started when its handler recorded a step (a `step:<name>` field,
-- record_step.lua's; a park records one) or parked it (the `parked` field, park.lua's, which
-- counts while the task is scheduled: the attempt that goes on removes it, see
-- step_records.lua). Such a task is never replaced (by a debounce or by its ID) nor its message
-- edited: its handler goes on from its records, made from that message. Go asynq keeps nothing
-- from an attempt (its dequeue removes `pending_since`, a park charges no retry), so only
-- fields of ours can tell.
--
-- KEYS -> none of its own; the function takes the key the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines a local function only.

-- Whether the task at `task_key`, in `state`, has started.
local function has_started(task_key, state)
    if state == "scheduled" and redis.call("HEXISTS", task_key, "parked") == 1 then
        return true
    end
    for _, field in ipairs(redis.call("HKEYS", task_key)) do
        if string.sub(field, 1, 5) == "step:" then
            return true
        end
    end
    return false
end

