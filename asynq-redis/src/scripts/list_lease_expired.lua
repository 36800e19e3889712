-- list_lease_expired: the active tasks of one queue whose lease expired (Go asynq's
-- listLeaseExpired).
--
-- KEYS[1] -> asynq:{<q>}:lease
-- ARGV[1] -> the cutoff: leases scored at or before it have expired, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- Returns: the encoded TaskMessages of those tasks (IDs without a task hash are skipped)
local found = {}
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE")) do
    local msg = redis.call("HGET", ARGV[2] .. id, "msg")
    if msg then
        found[#found + 1] = msg
    end
end
return found
