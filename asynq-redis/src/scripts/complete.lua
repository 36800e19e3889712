-- complete: keeps a task that succeeded with retention in the completed set until its
-- retention runs out, and counts it as processed (Go asynq's markAsComplete and
-- markAsCompleteUnique). Tells a waiting Rust client, if any.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:completed
-- KEYS[4] -> asynq:{<q>}:t:<id>
-- KEYS[5] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[6] -> asynq:{<q>}:processed
-- KEYS[7] -> asynq:{<q>}:unique:<type>:<md5>, the task's uniqueness lock, only if it has one
--            (released if the task holds it; a key of another type is left alone)
-- KEYS[last] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the daily counter's expiry, Unix seconds
-- ARGV[3] -> when the completed task expires (completion + retention), Unix seconds
-- ARGV[4] -> the encoded TaskMessage with completed_at set
-- ARGV[5] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[1], KEYS[2], ARGV[1]) then
    return 0
end
redis.call("ZADD", KEYS[3], ARGV[3], ARGV[1])
redis.call("HSET", KEYS[4], "msg", ARGV[4], "state", "completed")
incr_daily(KEYS[5], ARGV[2])
incr_total(KEYS[6])
release_lock(#KEYS == 8 and KEYS[7] or nil, ARGV[1])
log_event(KEYS[#KEYS], ARGV[#ARGV], "succeeded", ARGV[1], ARGV[4])
notify_waiters(KEYS[4], ARGV[5], ARGV[1])
return 1
