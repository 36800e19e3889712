-- message: helpers prepended to the scripts that read fields of an encoded asynq.TaskMessage
-- (protobuf) themselves: the type name and last error for event logs, the uniqueness lock of a
-- grouped task, whose hash Go does not give the field.
--
-- KEYS -> none of its own.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- Reads a protobuf varint of `s` at byte `pos`; returns it and the position after it, or nil
-- when `s` ends first.
local function read_varint(s, pos)
    local value, scale = 0, 1
    while true do
        local byte = string.byte(s, pos)
        if not byte then
            return nil, pos
        end
        pos = pos + 1
        value = value + (byte % 128) * scale
        if byte < 128 then
            return value, pos
        end
        scale = scale * 128
    end
end

-- Field `field` (a length-delimited one) of the encoded TaskMessage `msg`, or "" when it is
-- absent or `msg` is no message: 1 is the type name, 7 the last error, 10 the unique_key. Other
-- fields are skipped by their lengths, so a large payload costs nothing to step over.
local function message_field(msg, field)
    if type(msg) ~= "string" then
        return ""
    end
    local pos, len = 1, #msg
    while pos <= len do
        local tag
        tag, pos = read_varint(msg, pos)
        if not tag then
            return ""
        end
        local wire = tag % 8
        if wire == 0 then
            local value
            value, pos = read_varint(msg, pos)
            if not value then
                return ""
            end
        elseif wire == 1 then
            pos = pos + 8
        elseif wire == 2 then
            local size
            size, pos = read_varint(msg, pos)
            if not size then
                return ""
            end
            if (tag - wire) / 8 == field then
                return string.sub(msg, pos, pos + size - 1)
            end
            pos = pos + size
        elseif wire == 5 then
            pos = pos + 4
        else
            return ""
        end
    end
    return ""
end
