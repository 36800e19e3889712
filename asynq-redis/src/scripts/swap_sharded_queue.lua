-- swap_sharded_queue: replaces one declaration of a sharded queue if it is still as it was read,
-- so that two reshards (or a reshard and a drop of a drained generation) at once cannot undo
-- one another. Its one key is the global hash of declarations (no queue's slot), which a
-- Cluster serves as any single key.
--
-- KEYS[1] -> asynq:sharded_queues
-- ARGV[1] -> the logical queue's name
-- ARGV[2] -> the declaration as it was read
-- ARGV[3] -> the declaration to write
-- Returns: 1 written; 0 the declaration is no longer ARGV[2] (nothing written)
if redis.call("HGET", KEYS[1], ARGV[1]) ~= ARGV[2] then
    return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[3])
return 1
