-- give_back: an unfinished active task back to its queue, prepended (after common, message,
-- events and priority) to the scripts that give tasks back without charging them: requeue.lua
-- for one task, give_back_fetch.lua for those of a fetch whose reply was lost.
--
-- KEYS -> none of its own; the function takes the keys the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines a local function only.

-- Gives task `id` (its hash at `key`) back to its queue, next in line among the tasks of its
-- priority (Go asynq's requeue, for the default priority; see priority.lua), with no counter
-- changed and `pending_since` not set, as in Go. A `stalled` task also has the stall counted in
-- the task hash's `stalls` (a field of ours that Go never reads). Logs "requeued" when `cap` is
-- not "". Returns false, having written nothing, when the task is not active.
local function give_back(active, lease, pending, prioritized, sequence, key, id, stalled, events, cap)
    if not take_active(active, lease, id) then
        return false
    end
    push_pending(pending, prioritized, sequence, id, priority_of(redis.call("HGET", key, "priority")), true)
    redis.call("HSET", key, "state", "pending")
    if stalled then
        redis.call("HINCRBY", key, "stalls", 1)
    end
    if cap ~= "" then
        log_event(events, cap, "requeued", id, redis.call("HGET", key, "msg"))
    end
    return true
end
