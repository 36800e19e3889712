-- archive_corrupt: settles an active task that cannot run because its stored data is corrupt
-- (ours; Go has no counterpart). A task whose `msg` cannot be decoded, or names another task,
-- is archived as it is: its `msg` cannot be rewritten with an error, so it is kept byte for
-- byte for an operator to inspect, and no counter moves (the task was never processed). An ID
-- whose hash is missing or has no `msg` is nothing that could be archived or shown: it is
-- dropped from the active list and the lease set, and its stub hash deleted.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:lease
-- KEYS[4] -> asynq:{<q>}:archived
-- ARGV[1] -> the task ID
-- ARGV[2] -> now, Unix seconds (the archive score)
-- ARGV[3] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- Returns: 1 archived; 2 dropped (no msg); 0 the task is not active any more (nothing written)
if not take_active(KEYS[2], KEYS[3], ARGV[1]) then
    return 0
end
if redis.call("HEXISTS", KEYS[1], "msg") == 0 then
    redis.call("DEL", KEYS[1])
    return 2
end
redis.call("ZADD", KEYS[4], ARGV[2], ARGV[1])
redis.call("HSET", KEYS[1], "state", "archived")
notify_waiters(KEYS[1], ARGV[3], ARGV[1])
return 1
