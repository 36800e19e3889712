-- write_progress: stores a handler's progress report in its active task's hash, replacing the
-- last one. The field `progress` is ours (Go asynq neither reads nor writes it; dequeue.lua
-- clears it, so that each attempt starts with none), encoded by asynq-redis/src/progress.rs as
-- "<millionths done>:<reported at, Unix milliseconds>:<message>".
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the encoded report
-- ARGV[2] -> the task ID
-- ARGV[3] -> the event stream's cap, or "" (see events.lua); its event carries the report
-- Returns: 1 stored; 0 the task does not exist or is not active (nothing written)
if redis.call("HGET", KEYS[1], "state") ~= "active" then
    return 0
end
redis.call("HSET", KEYS[1], "progress", ARGV[1])
if ARGV[3] ~= "" then
    log_event(KEYS[2], ARGV[3], "progress", ARGV[2], redis.call("HGET", KEYS[1], "msg"), "progress", ARGV[1])
end
return 1
