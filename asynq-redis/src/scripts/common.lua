-- common: helpers prepended to the scripts that lease, settle and count tasks.
--
-- KEYS -> none of its own; the functions take the keys the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- How many arguments one variadic command gets from `call_chunked` (Lua's stack is bounded);
-- even, so that a chunk never splits a pair.
local CHUNK = 500

-- Runs the variadic `command` with `items` as its arguments, CHUNK at a time, each call after
-- `key` when it is given.
local function call_chunked(command, key, items)
    for first = 1, #items, CHUNK do
        local last = math.min(first + CHUNK - 1, #items)
        if key then
            redis.call(command, key, unpack(items, first, last))
        else
            redis.call(command, unpack(items, first, last))
        end
    end
end

-- Increments a daily counter; the first increment sets its expiry (Unix seconds).
local function incr_daily(key, expire_at)
    if redis.call("INCR", key) == 1 then
        redis.call("EXPIREAT", key, expire_at)
    end
end

-- Increments a total counter, wrapping to 1 at the largest int64 (9223372036854775807), as in
-- Go asynq: INCR refuses to pass it with an error reply, caught here, so no GET is needed first
-- (Go's script spends one).
local function incr_total(key)
    local reply = redis.pcall("INCR", key)
    if type(reply) == "table" and reply.err then
        redis.call("SET", key, 1)
    end
end

-- Adds n to a daily counter; the first addition sets its expiry (Unix seconds).
local function incr_daily_by(key, n, expire_at)
    if redis.call("INCRBY", key, n) == n then
        redis.call("EXPIREAT", key, expire_at)
    end
end

-- Adds n to a total counter, starting again from n where it would pass the largest int64
-- (INCRBY refuses to, as INCR does in incr_total).
local function incr_total_by(key, n)
    local reply = redis.pcall("INCRBY", key, n)
    if type(reply) == "table" and reply.err then
        redis.call("SET", key, n)
    end
end

-- Takes task `id` out of the active list and the lease set. Returns false, having written
-- nothing, when the task is not active.
local function take_active(active, lease, id)
    if redis.call("ZREM", lease, id) == 0 then
        return false
    end
    -- An ID is in the active list once, so the scan can stop at the first match; it starts from
    -- the tail, where the longest-running tasks (the likeliest to finish next) are. The count is
    -- a string: Redis formats a Lua number argument with "%.17g", 0.2 µs a call here, and the
    -- calls made for every task pass none.
    redis.call("LREM", active, "-1", id)
    return true
end

-- Publishes task `id` on `channel` (asynq:{<q>}:finished) if a Rust client waits for the task to
-- finish, which mark_waiter.lua records as the task hash's `waiters` field. Call it before the
-- hash is deleted. Go asynq never sets the field: for its tasks this costs one HEXISTS.
local function notify_waiters(task_key, channel, id)
    if redis.call("HEXISTS", task_key, "waiters") == 1 then
        redis.call("PUBLISH", channel, id)
    end
end

-- Deletes the uniqueness lock `key` if task `id` holds it. Never raises: a key that is not a
-- string (a corrupt unique_key naming a list or a hash) holds no lock and is left alone, where a
-- GET would fail the script after its earlier writes.
local function release_lock(key, id)
    if key and redis.call("TYPE", key).ok == "string" and redis.call("GET", key) == id then
        redis.call("DEL", key)
    end
end
