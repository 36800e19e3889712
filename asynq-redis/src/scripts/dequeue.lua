-- dequeue: leases up to ARGV[3] pending tasks of one queue to a worker (Go asynq's dequeue,
-- repeated; each task gets exactly the state, lease and bookkeeping Go's gives one).
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:paused
-- KEYS[3] -> asynq:{<q>}:active
-- KEYS[4] -> asynq:{<q>}:lease
-- ARGV[1] -> the lease expiry, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the most tasks to take
-- Returns: a flat array of pairs, oldest first: the task ID, then its encoded TaskMessage, or
--          nil when the ID had no task hash or the hash no `msg`; such an ID cannot run, so it
--          is dropped from the active list and its stub hash deleted (Go would leave it active
--          for good), and the caller reports it. Empty when the queue is paused or empty.
if redis.call("EXISTS", KEYS[2]) == 1 then
    return {}
end
local taken = {}
for _ = 1, tonumber(ARGV[3]) do
    local id = redis.call("LMOVE", KEYS[1], KEYS[3], "RIGHT", "LEFT")
    if not id then
        break
    end
    local key = ARGV[2] .. id
    local msg = redis.call("HGET", key, "msg")
    if msg then
        redis.call("HSET", key, "state", "active")
        redis.call("HDEL", key, "pending_since")
        redis.call("ZADD", KEYS[4], ARGV[1], id)
    else
        redis.call("LREM", KEYS[3], 1, id)
        redis.call("DEL", key)
    end
    taken[#taken + 1] = id
    taken[#taken + 1] = msg
end
return taken
