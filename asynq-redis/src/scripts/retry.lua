-- retry: moves a failed task to the retry set, due at ARGV[3] (Go asynq's retry). The
-- uniqueness lock is kept.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:lease
-- KEYS[4] -> asynq:{<q>}:retry
-- KEYS[5] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[6] -> asynq:{<q>}:failed:<YYYY-MM-DD>
-- KEYS[7] -> asynq:{<q>}:processed
-- KEYS[8] -> asynq:{<q>}:failed
-- KEYS[9] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the encoded TaskMessage with the error recorded
-- ARGV[3] -> the retry time, Unix seconds
-- ARGV[4] -> the daily counters' expiry, Unix seconds
-- ARGV[5] -> "1" when the error counts as a failure (processed and failed go up), else "0"
-- ARGV[6] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[2], KEYS[3], ARGV[1]) then
    return 0
end
redis.call("ZADD", KEYS[4], ARGV[3], ARGV[1])
redis.call("HSET", KEYS[1], "msg", ARGV[2], "state", "retry")
if ARGV[5] == "1" then
    incr_daily(KEYS[5], ARGV[4])
    incr_daily(KEYS[6], ARGV[4])
    incr_total(KEYS[7])
    incr_total(KEYS[8])
end
log_failure(KEYS[9], ARGV[6], "retried", ARGV[1], ARGV[2])
return 1
