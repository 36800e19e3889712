-- enqueue_replacing: stores a new task as pending or scheduled in place of a waiting one, in one
-- step, so that two producers racing never leave two tasks or none (ours; Go asynq has neither
-- mode). Two modes:
--
--   "debounce": the task the debounce mark names, if it is still scheduled with this key (its
--               hash's `debounce` field) and has not started (started.lua), is deleted (its
--               uniqueness lock released, a waiting Rust client told) and the new task stored
--               under its own ID, its hash naming the key; the mark then names the new task. A
--               task that is no longer scheduled (due, running, gone, or replaced by ID) or that
--               started (a handler parked it) is left alone: the new task starts a new window.
--   "replace":  the pending or scheduled task with the new task's ID, if it has not started
--               (started.lua), is taken out of its container (its lock released) and the new
--               message stored under the same ID, in the new placement; a Rust client waiting
--               for the ID keeps waiting, for the replacement.
--
-- KEYS[1] -> <ns>:{<q>}:t:<id>              the new task's hash
-- KEYS[2] -> <ns>:{<q>}:pending
-- KEYS[3] -> <ns>:{<q>}:scheduled
-- KEYS[4] -> <ns>:{<q>}:groups              (detach_waiting's, untouched here)
-- KEYS[5] -> <ns>:{<q>}:idle_workers        exists while a Rust server waits for work
-- KEYS[6] -> <ns>:{<q>}:prioritized         (ours; see priority.lua)
-- KEYS[7] -> <ns>:{<q>}:priority_seq        (ours; see priority.lua)
-- KEYS[8] -> <ns>:{<q>}:debounce:<key>      the debounce mark, a string holding a task ID
--                                           (mode "debounce" only)
-- KEYS[last] -> <ns>:{<q>}:events            the event stream (see events.lua)
-- ARGV[1] -> the encoded TaskMessage
-- ARGV[2] -> the task ID
-- ARGV[3] -> "debounce" or "replace"
-- ARGV[4] -> "pending" or "scheduled" (always "scheduled" for "debounce")
-- ARGV[5] -> pending: now in Unix nanoseconds (pending_since); scheduled: the process time in
--            Unix seconds
-- ARGV[6] -> pending: the wake-up channel, <ns>:{<q>}:ready; scheduled: the due-notice channel,
--            <ns>:due, on which KEYS[3]'s name is published when the task is its earliest (ours)
-- ARGV[7] -> the queue key prefix, <ns>:{<q>}:
-- ARGV[8] -> the group key prefix, <ns>:{<q>}:g:
-- ARGV[9] -> the finish channel, <ns>:{<q>}:finished
-- ARGV[10] -> "debounce": how long the mark lives, milliseconds (past the task's due time)
-- ARGV[11] -> "debounce": the debounce key
-- ARGV[12] -> the new task's priority, -10 to 10 but not 0, or "" for the default: a pending
--             task of another goes to the prioritized set, and a scheduled one keeps it in its
--             hash for when it is due (see priority.lua)
-- ARGV[13] -> the event stream's cap, or "" (see events.lua)
-- Returns: "debounce": 1 stored, 2 stored in place of a scheduled task, 0 a task with this ID
--          exists (nothing written);
--          "replace": 1 replaced, 0 no such task, -1 the task is neither pending nor scheduled,
--          -2 the task has started (nothing written);
--          an error reply when the replaced task's container does not hold it (nothing written)

local function store()
    local priority = priority_of(ARGV[12])
    if priority then
        redis.call("HSET", KEYS[1], "priority", ARGV[12])
    end
    if ARGV[4] == "pending" and priority then
        redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[5])
        push_pending(nil, KEYS[6], KEYS[7], ARGV[2], priority, false)
        if redis.call("DEL", KEYS[5]) == 1 then
            redis.call("PUBLISH", ARGV[6], "")
        end
    elseif ARGV[4] == "pending" then
        redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[5])
        if redis.call("LPUSH", KEYS[2], ARGV[2]) == 1 and redis.call("DEL", KEYS[5]) == 1 then
            redis.call("PUBLISH", ARGV[6], "")
        end
    else
        redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "scheduled")
        redis.call("ZADD", KEYS[3], ARGV[5], ARGV[2])
        if redis.call("ZRANGE", KEYS[3], 0, 0)[1] == ARGV[2] then
            redis.call("PUBLISH", ARGV[6], KEYS[3])
        end
    end
    if ARGV[3] == "debounce" then
        redis.call("HSET", KEYS[1], "debounce", ARGV[11])
    end
    log_event(KEYS[#KEYS], ARGV[13], "enqueued", ARGV[2], ARGV[1])
end

-- Whether the task at `key` is scheduled, debounced with this call's key, and not started.
local function debounced_here(key)
    local state, debounce = unpack(redis.call("HMGET", key, "state", "debounce"))
    return state == "scheduled" and debounce == ARGV[11] and not has_started(key, state)
end

-- Takes the task at KEYS[1], in `state`, out of its container and stores the new message there
-- instead, keeping the `waiters` mark of a Rust client waiting for the ID. Returns nil, or an
-- error reply (nothing written) when the container does not hold the task.
local function replace_in_place(state)
    local detach_error = detach_waiting(ARGV[2], state, nil, ARGV[7], ARGV[8], KEYS[4])
    if detach_error then
        return detach_error
    end
    local waiters = redis.call("HGET", KEYS[1], "waiters")
    release_lock(unique_key_of(KEYS[1]), ARGV[2])
    redis.call("DEL", KEYS[1])
    store()
    if waiters then
        redis.call("HSET", KEYS[1], "waiters", waiters)
    end
    return nil
end

if ARGV[3] == "debounce" then
    local old = redis.call("GET", KEYS[8])
    local replaced = 1
    if old == ARGV[2] and debounced_here(KEYS[1]) then
        -- The same ID again (a fixed task ID): the task is replaced where it is.
        local replace_error = replace_in_place("scheduled")
        if replace_error then
            return replace_error
        end
        replaced = 2
    else
        if redis.call("EXISTS", KEYS[1]) == 1 then
            return 0
        end
        local old_key = old and ARGV[7] .. "t:" .. old
        if old and debounced_here(old_key) then
            local detach_error = detach_waiting(old, "scheduled", nil, ARGV[7], ARGV[8], KEYS[4])
            if detach_error then
                return detach_error
            end
            if ARGV[13] ~= "" then
                log_event(KEYS[#KEYS], ARGV[13], "deleted", old, redis.call("HGET", old_key, "msg"))
            end
            delete_task_hash(old_key, old, ARGV[9])
            replaced = 2
        end
        store()
    end
    redis.call("SET", KEYS[8], ARGV[2], "PX", ARGV[10])
    return replaced
end

local state = redis.call("HGET", KEYS[1], "state")
if not state then
    return 0
end
if state ~= "pending" and state ~= "scheduled" then
    return -1
end
if has_started(KEYS[1], state) then
    return -2
end
local replace_error = replace_in_place(state)
if replace_error then
    return replace_error
end
return 1
