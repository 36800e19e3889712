-- mark_waiter: records on a task's hash that a Rust client waits for the task to finish, so
-- that the script finishing it for good (done, done_batch, complete, archive) publishes its ID
-- on the queue's finish channel (see notify_waiters in common.lua). The mark is the hash field
-- `waiters`; it goes when the hash goes, and Go asynq neither reads nor writes it.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV -> none
-- Returns: 1 marked; 0 the task does not exist (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
redis.call("HSET", KEYS[1], "waiters", 1)
return 1
