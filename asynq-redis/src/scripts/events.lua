-- events: helpers prepended (after message.lua) to the scripts that log task events (ours; Go
-- asynq has no event log). A script that logs events takes the queue's event stream,
-- asynq:{<q>}:events, as its last key, and the stream's cap (how many events it keeps) as its
-- last argument: "" when the queue keeps no log, which makes logging cost nothing but that
-- argument.
--
-- KEYS -> none of its own; the functions take the stream the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- Logs event `kind` of task `id`, whose encoded TaskMessage is `msg`, to `stream` trimmed to
-- exactly `cap` events (the memory broker keeps as many), when `cap` is not "". Extra field-value pairs follow the task's type.
local function log_event(stream, cap, kind, id, msg, ...)
    if cap == "" then
        return
    end
    redis.call("XADD", stream, "MAXLEN", cap, "*", "kind", kind, "task", id, "type", message_field(msg, 1), ...)
end

-- Logs event `kind` of the failed task `id` with the error its message `msg` records.
local function log_failure(stream, cap, kind, id, msg)
    if cap == "" then
        return
    end
    log_event(stream, cap, kind, id, msg, "error", message_field(msg, 7))
end
