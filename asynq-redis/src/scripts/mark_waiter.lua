-- mark_waiter: records that a Rust client waits for a task to finish, so that the script
-- finishing it for good (done, done_batch, complete, archive, settle_batch) publishes its ID on
-- the queue's finish channel (see notify_waiters in common.lua). Run again while the wait
-- lasts, to renew the queue's mark.
--
-- Two marks: the task hash's field `waiters`, which goes when the hash goes, and the queue's
-- `waiting` key, which expires unless renewed, so that a script settling many tasks looks for
-- the first mark only while some client waits. Go asynq neither reads nor writes either.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:waiting
-- ARGV[1] -> how long the queue's mark lasts, whole seconds
-- Returns: 1 marked; 0 the task does not exist (nothing written)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
redis.call("HSET", KEYS[1], "waiters", 1)
redis.call("SET", KEYS[2], 1, "EX", ARGV[1])
return 1
