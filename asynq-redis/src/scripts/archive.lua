-- archive: moves a task that failed for good to the archive, trims the archive, and counts
-- the task as processed and failed (Go asynq v0.26's archive). The uniqueness lock is kept.
-- Tells a waiting Rust client, if any.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:lease
-- KEYS[4] -> asynq:{<q>}:archived
-- KEYS[5] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[6] -> asynq:{<q>}:failed:<YYYY-MM-DD>
-- KEYS[7] -> asynq:{<q>}:processed
-- KEYS[8] -> asynq:{<q>}:failed
-- KEYS[9] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the task ID
-- ARGV[2] -> the encoded TaskMessage with the error recorded
-- ARGV[3] -> now, Unix seconds
-- ARGV[4] -> the age cutoff: archived tasks scored at or before it are deleted, Unix seconds
-- ARGV[5] -> the archive's size limit (10000: at most 9 999 remain after a trim)
-- ARGV[6] -> the daily counters' expiry, Unix seconds
-- ARGV[7] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[8] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[9] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 done; 0 the task is not active (nothing written)
if not take_active(KEYS[2], KEYS[3], ARGV[1]) then
    return 0
end
redis.call("ZADD", KEYS[4], ARGV[3], ARGV[1])
local function delete_all(ids)
    for _, id in ipairs(ids) do
        redis.call("DEL", ARGV[7] .. id)
        redis.call("ZREM", KEYS[4], id)
    end
end
delete_all(redis.call("ZRANGE", KEYS[4], "-inf", ARGV[4], "BYSCORE"))
delete_all(redis.call("ZRANGE", KEYS[4], 0, -tonumber(ARGV[5])))
redis.call("HSET", KEYS[1], "msg", ARGV[2], "state", "archived")
incr_daily(KEYS[5], ARGV[6])
incr_daily(KEYS[6], ARGV[6])
incr_total(KEYS[7])
incr_total(KEYS[8])
notify_waiters(KEYS[1], ARGV[8], ARGV[1])
log_failure(KEYS[9], ARGV[9], "archived", ARGV[1], ARGV[2])
return 1
