-- events: helpers prepended to the scripts that log task events (ours; Go asynq has no event
-- log). A script that logs events takes the queue's event stream, asynq:{<q>}:events, as its
-- last key, and the stream's cap (about how many events it keeps) as its last argument: "" when
-- the queue keeps no log, which makes logging cost nothing but that argument.
--
-- KEYS -> none of its own; the functions take the stream the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- Field `field` (a length-delimited one) of the encoded TaskMessage `msg`, or "" when it is
-- absent or `msg` is no message: 1 is the type name, 7 the last error. Other fields are skipped
-- by their lengths, so a large payload costs nothing to step over.
-- The varint of `msg` at byte `at`, and the byte after it; nil at the end of `msg`.
local function read_varint(msg, at)
    local value, scale = 0, 1
    repeat
        local byte = string.byte(msg, at)
        if not byte then
            return nil, at
        end
        at = at + 1
        value = value + (byte % 128) * scale
        scale = scale * 128
    until byte < 128
    return value, at
end

local function message_field(msg, field)
    if type(msg) ~= "string" then
        return ""
    end
    local at, size = 1, #msg
    while at <= size do
        local key
        key, at = read_varint(msg, at)
        if not key then
            return ""
        end
        local wire = key % 8
        if wire == 0 then
            local value
            value, at = read_varint(msg, at)
            if not value then
                return ""
            end
        elseif wire == 2 then
            local length
            length, at = read_varint(msg, at)
            if not length then
                return ""
            end
            if (key - wire) / 8 == field then
                return string.sub(msg, at, at + length - 1)
            end
            at = at + length
        elseif wire == 1 then
            at = at + 8
        elseif wire == 5 then
            at = at + 4
        else
            return ""
        end
    end
    return ""
end

-- Logs event `kind` of task `id`, whose encoded TaskMessage is `msg`, to `stream` trimmed to
-- about `cap` events, when `cap` is not "". Extra field-value pairs follow the task's type.
local function log_event(stream, cap, kind, id, msg, ...)
    if cap == "" then
        return
    end
    redis.call("XADD", stream, "MAXLEN", "~", cap, "*", "kind", kind, "task", id, "type", message_field(msg, 1), ...)
end

-- Logs event `kind` of the failed task `id` with the error its message `msg` records.
local function log_failure(stream, cap, kind, id, msg)
    if cap == "" then
        return
    end
    log_event(stream, cap, kind, id, msg, "error", message_field(msg, 7))
end
