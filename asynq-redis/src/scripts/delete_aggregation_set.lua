-- delete_aggregation_set: deletes an aggregation set, its members' task hashes and its index
-- entry (Go asynq's deleteAggregationSet). The members' uniqueness locks are kept, as in Go.
--
-- KEYS[1] -> asynq:{<q>}:g:<group>:<set id>
-- KEYS[2] -> asynq:{<q>}:aggregation_sets
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- Returns: OK, whether or not the set existed
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
    redis.call("DEL", ARGV[1] .. id)
end
redis.call("DEL", KEYS[1])
redis.call("ZREM", KEYS[2], KEYS[1])
return redis.status_reply("OK")
