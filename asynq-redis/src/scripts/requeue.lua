-- requeue: gives an unfinished active task back to its queue (give_back.lua's give_back: next in
-- line among the tasks of its priority, as Go asynq's requeue does at shutdown for the default),
-- and wakes idle Rust servers. For a started task whose lease expired and is forgiven, it also
-- counts the stall.
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
if not give_back(KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[7], KEYS[4], ARGV[1], ARGV[3] == "1", KEYS[8], ARGV[4]) then
    return 0
end
if redis.call("DEL", KEYS[5]) == 1 then
    redis.call("PUBLISH", ARGV[2], "")
end
return 1
