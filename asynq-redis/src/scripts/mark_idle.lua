-- mark_idle: records that a Rust server is about to wait for work in this queue, so that the
-- next producer to make a task pending publishes a wake-up; and says whether the wait is
-- needed at all (a task may have become pending before the mark was set).
--
-- KEYS[1] -> asynq:{<q>}:idle_workers
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:paused
-- KEYS[4] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- ARGV[1] -> how long the mark lasts, whole seconds
-- Returns: the number of tasks a dequeue could take now (0 when the queue is paused)
redis.call("SET", KEYS[1], 1, "EX", ARGV[1])
-- One EXISTS for the paused mark and the prioritized set, as in dequeue.lua: a queue without
-- either pays what it paid before priorities.
local found = redis.call("EXISTS", KEYS[3], KEYS[4])
if found == 0 then
    return redis.call("LLEN", KEYS[2])
end
if found == 2 or redis.call("EXISTS", KEYS[3]) == 1 then
    return 0
end
return redis.call("LLEN", KEYS[2]) + redis.call("ZCARD", KEYS[4])
