-- read_aggregation_set: the members of an aggregation set and its deadline (Go asynq's
-- readAggregationSet, and the ZSCORE Go sends after it, in one script).
--
-- KEYS[1] -> asynq:{<q>}:g:<group>:<set id>
-- KEYS[2] -> asynq:{<q>}:aggregation_sets
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- Returns: nil when the set is not indexed (it does not exist); else {deadline in Unix seconds,
--          the members' encoded TaskMessages in ascending score (members without a task hash
--          are left out)}
local deadline = redis.call("ZSCORE", KEYS[2], KEYS[1])
if not deadline then
    return false
end
local messages = {}
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
    local msg = redis.call("HGET", ARGV[1] .. id, "msg")
    if msg then
        messages[#messages + 1] = msg
    end
end
return {deadline, messages}
