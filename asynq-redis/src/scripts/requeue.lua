-- requeue: gives an unfinished active task back to its queue, next in line (Go asynq's
-- requeue, used at shutdown), and wakes idle Rust servers. No counter changes; pending_since is
-- not set, as in Go.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:pending
-- KEYS[4] -> asynq:{<q>}:t:<id>
-- KEYS[5] -> asynq:{<q>}:idle_workers
-- ARGV[1] -> the task ID
-- ARGV[2] -> the wake-up channel, asynq:{<q>}:ready
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[1], KEYS[2], ARGV[1]) then
    return 0
end
redis.call("RPUSH", KEYS[3], ARGV[1])
redis.call("HSET", KEYS[4], "state", "pending")
if redis.call("DEL", KEYS[5]) == 1 then
    redis.call("PUBLISH", ARGV[2], "")
end
return 1
