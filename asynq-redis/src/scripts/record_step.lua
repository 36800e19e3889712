-- record_step: records a durable step's result in its active task's hash, replacing a record
-- of the same name. The fields `step:<name>` are ours (Go asynq neither reads nor writes them,
-- and they go when the hash goes), encoded by asynq-redis/src/steps.rs as
-- "<recorded at, Unix milliseconds>:<result bytes>".
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV[1] -> the field, "step:<name>"
-- ARGV[2] -> the encoded record
-- Returns: 1 recorded; 0 the task does not exist or is not active (nothing written)
if redis.call("HGET", KEYS[1], "state") ~= "active" then
    return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
