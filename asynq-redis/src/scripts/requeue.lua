-- requeue: gives an unfinished active task back to its queue, next in line among the tasks of
-- its priority (Go asynq's requeue, used at shutdown, for the default; see priority.lua), and
-- wakes idle Rust servers. No counter changes; pending_since is
-- not set, as in Go. For a started task whose lease expired and is forgiven, it also counts the
-- stall in the task hash's `stalls`, a field of ours that Go never reads.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:pending
-- KEYS[4] -> asynq:{<q>}:t:<id>
-- KEYS[5] -> asynq:{<q>}:idle_workers
-- KEYS[6] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[7] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- KEYS[8] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[3] -> "1" to count a stall, "0" not to
-- ARGV[4] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[1], KEYS[2], ARGV[1]) then
    return 0
end
push_pending(KEYS[3], KEYS[6], KEYS[7], ARGV[1], priority_of(redis.call("HGET", KEYS[4], "priority")), true)
redis.call("HSET", KEYS[4], "state", "pending")
if ARGV[3] == "1" then
    redis.call("HINCRBY", KEYS[4], "stalls", 1)
end
if ARGV[4] ~= "" then
    log_event(KEYS[8], ARGV[4], "requeued", ARGV[1], redis.call("HGET", KEYS[4], "msg"))
end
if redis.call("DEL", KEYS[5]) == 1 then
    redis.call("PUBLISH", ARGV[2], "")
end
return 1
