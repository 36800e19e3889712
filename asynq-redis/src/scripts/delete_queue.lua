-- delete_queue: removes a queue's containers (Go asynq v0.26's removeQueue, and with ARGV[2]
-- removeQueueForce, which deletes the tasks too). As in Go, the completed set, groups,
-- aggregation sets, counters and the paused mark stay; the caller removes the name from
-- asynq:queues. A forced removal releases the uniqueness locks the deleted tasks hold (Go's
-- does not).
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:active
-- KEYS[3] -> asynq:{<q>}:scheduled
-- KEYS[4] -> asynq:{<q>}:retry
-- KEYS[5] -> asynq:{<q>}:archived
-- KEYS[6] -> asynq:{<q>}:lease
-- KEYS[7] -> asynq:{<q>}:prioritized (ours; see priority.lua): its tasks count as pending
-- KEYS[8] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> "1" to delete the tasks too (force), "0" to refuse a queue holding tasks
-- ARGV[3] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- Returns: 1 removed; -1 the queue holds tasks (without force); -2 the queue has active tasks
--          (with force); nothing is written unless 1
if redis.call("LLEN", KEYS[2]) > 0 then
    return ARGV[2] == "1" and -2 or -1
end
local lists = {KEYS[1]}
local zsets = {KEYS[3], KEYS[4], KEYS[5], KEYS[7]}
if ARGV[2] ~= "1" then
    if redis.call("LLEN", KEYS[1]) > 0 then
        return -1
    end
    for _, key in ipairs(zsets) do
        if redis.call("ZCARD", key) > 0 then
            return -1
        end
    end
else
    for _, key in ipairs(lists) do
        for _, id in ipairs(redis.call("LRANGE", key, 0, -1)) do
            delete_task_hash(ARGV[1] .. id, id, ARGV[3])
        end
    end
    for _, key in ipairs(zsets) do
        for _, id in ipairs(redis.call("ZRANGE", key, 0, -1)) do
            delete_task_hash(ARGV[1] .. id, id, ARGV[3])
        end
    end
end
redis.call("DEL", KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8])
return 1
