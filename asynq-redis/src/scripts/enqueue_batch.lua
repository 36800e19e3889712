-- enqueue_batch: `enqueue` for many ready, non-unique, ungrouped tasks of one queue at once:
-- each is stored as pending exactly as `enqueue` stores it, and idle Rust servers are woken once.
--
-- One variadic EXISTS per chunk of tasks tells whether any ID is taken; only then is each
-- looked at alone. The IDs go onto the pending list by one LPUSH per chunk.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:idle_workers
-- ARGV[1] -> now, Unix nanoseconds (pending_since)
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[4..] -> pairs of (task ID, encoded TaskMessage)
-- Returns: one reply per task, in order: 1 stored; 0 a task with this ID exists, or came
--          earlier in the batch (nothing stored)
local task_keys = {}
for i = 4, #ARGV, 2 do
    task_keys[#task_keys + 1] = ARGV[2] .. ARGV[i]
end
local some_exist = false
for first = 1, #task_keys, CHUNK do
    if redis.call("EXISTS", unpack(task_keys, first, math.min(first + CHUNK - 1, #task_keys))) > 0 then
        some_exist = true
        break
    end
end
local replies, ids, seen = {}, {}, {}
for n, key in ipairs(task_keys) do
    local id = ARGV[2 + 2 * n]
    if seen[id] or (some_exist and redis.call("EXISTS", key) == 1) then
        replies[n] = 0
    else
        seen[id] = true
        redis.call("HSET", key, "msg", ARGV[3 + 2 * n], "state", "pending", "pending_since", ARGV[1])
        ids[#ids + 1] = id
        replies[n] = 1
    end
end
call_chunked("LPUSH", KEYS[1], ids)
if #ids > 0 and redis.call("DEL", KEYS[2]) == 1 then
    redis.call("PUBLISH", ARGV[3], "")
end
return replies
