-- done_batch: `done` for many tasks of one queue at once: deletes each task that succeeded
-- without retention (or was revoked), releases the uniqueness locks they hold, and counts them
-- as processed. Each task gets exactly what `done` gives it, a waiting Rust client's
-- notification included.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[4] -> asynq:{<q>}:processed
-- ARGV[1] -> the daily counter's expiry, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[4..] -> pairs of (task ID, its uniqueness lock key or "")
-- Returns: one reply per task, in order: 1 done; 0 the task is not active (nothing written)
local replies, done = {}, 0
for i = 4, #ARGV, 2 do
    local id, lock = ARGV[i], ARGV[i + 1]
    if take_active(KEYS[1], KEYS[2], id) then
        notify_waiters(ARGV[2] .. id, ARGV[3], id)
        redis.call("DEL", ARGV[2] .. id)
        if lock ~= "" then
            release_lock(lock, id)
        end
        done = done + 1
        replies[#replies + 1] = 1
    else
        replies[#replies + 1] = 0
    end
end
if done > 0 then
    incr_daily_by(KEYS[3], done, ARGV[1])
    incr_total_by(KEYS[4], done)
end
return replies
