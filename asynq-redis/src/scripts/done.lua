-- done: deletes a task that succeeded without retention, or was revoked, and counts it as
-- processed (Go asynq's done and doneUnique). Tells a waiting Rust client, if any.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:t:<id>
-- KEYS[4] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[5] -> asynq:{<q>}:processed
-- KEYS[6] -> asynq:{<q>}:unique:<type>:<md5>, the task's uniqueness lock, only if it has one
--            (released if the task holds it; a key of another type is left alone)
-- KEYS[last] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the daily counter's expiry, Unix seconds
-- ARGV[3] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[1], KEYS[2], ARGV[1]) then
    return 0
end
notify_waiters(KEYS[3], ARGV[3], ARGV[1])
if ARGV[#ARGV] ~= "" then
    log_event(KEYS[#KEYS], ARGV[#ARGV], "succeeded", ARGV[1], redis.call("HGET", KEYS[3], "msg"))
end
redis.call("DEL", KEYS[3])
incr_daily(KEYS[4], ARGV[2])
incr_total(KEYS[5])
release_lock(#KEYS == 7 and KEYS[6] or nil, ARGV[1])
return 1
