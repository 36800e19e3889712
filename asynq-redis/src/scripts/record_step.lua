-- record_step: records a durable step's result in its active task's hash, replacing a record
-- of the same name. The fields `step:<name>` are ours (Go asynq neither reads nor writes them,
-- and they go when the hash goes), encoded by asynq-redis/src/steps.rs as
-- "<recorded at, Unix milliseconds>:<result bytes>".
--
-- Logs a "step" event naming the step (see events.lua).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the field, "step:<name>"
-- ARGV[2] -> the encoded record
-- ARGV[3] -> the task ID
-- ARGV[4] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 recorded; 0 the task does not exist or is not active (nothing written)
if redis.call("HGET", KEYS[1], "state") ~= "active" then
    return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] ~= "" then
    local msg = redis.call("HGET", KEYS[1], "msg")
    log_event(KEYS[2], ARGV[4], "step", ARGV[3], msg, "name", string.sub(ARGV[1], 6))
end
return 1
