-- enqueue_batch: `enqueue` for many ready, non-unique, ungrouped tasks of one queue at once:
-- each is stored as pending exactly as `enqueue` stores it, and idle Rust servers are woken once.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:idle_workers
-- ARGV[1] -> now, Unix nanoseconds (pending_since)
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[4..] -> pairs of (task ID, encoded TaskMessage)
-- Returns: one reply per task, in order: 1 stored; 0 a task with this ID exists (nothing stored)
local replies, ids = {}, {}
for i = 4, #ARGV, 2 do
    local key = ARGV[2] .. ARGV[i]
    if redis.call("EXISTS", key) == 1 then
        replies[#replies + 1] = 0
    else
        redis.call("HSET", key, "msg", ARGV[i + 1], "state", "pending", "pending_since", ARGV[1])
        ids[#ids + 1] = ARGV[i]
        replies[#replies + 1] = 1
    end
end
-- LPUSH in slices: Lua's unpack is bounded by the C stack.
for first = 1, #ids, 1000 do
    redis.call("LPUSH", KEYS[1], unpack(ids, first, math.min(first + 999, #ids)))
end
if #ids > 0 and redis.call("DEL", KEYS[2]) == 1 then
    redis.call("PUBLISH", ARGV[3], "")
end
return replies
