-- enqueue_plain: stores a plain task as pending (Go asynq's enqueue, of its width): a task of the
-- default priority with no uniqueness, group, schedule or replacement, in a queue that keeps no
-- event log. enqueue.lua does the same for it, and more for the others; this script spares such
-- a task the wider call and the helpers that script prepends, which Redis pays for on every call.
--
-- A task that makes the pending list non-empty publishes a wake-up for idle Rust servers, as
-- enqueue.lua does (see there for why a task joining others needs none), with the payload
-- "kept": the idle mark stays in place (pubsub.rs, MARK_KEPT).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>   the task hash
-- KEYS[2] -> asynq:{<q>}:pending
-- ARGV[1] -> the encoded TaskMessage
-- ARGV[2] -> the task ID
-- ARGV[3] -> now in Unix nanoseconds (pending_since)
-- ARGV[4] -> the wake-up channel, asynq:{<q>}:ready
-- Returns: 1 stored; 2 stored into an empty pending list, so the queue may have been removed
--          since the caller registered it; 0 a task with this ID exists (nothing stored).
if redis.call("EXISTS", KEYS[1]) == 1 then
    return 0
end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[3])
if redis.call("LPUSH", KEYS[2], ARGV[2]) == 1 then
    redis.call("PUBLISH", ARGV[4], "kept")
    return 2
end
return 1
