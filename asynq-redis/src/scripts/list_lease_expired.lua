-- list_lease_expired: the active tasks of one queue whose lease expired (Go asynq's
-- listLeaseExpired). Writes nothing.
--
-- KEYS[1] -> asynq:{<q>}:lease
-- ARGV[1] -> the cutoff: leases scored at or before it have expired, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- Returns: a flat array of pairs: the task ID, then its encoded TaskMessage, or nil when the
--          ID has no task hash or the hash no `msg` (Go skips those, and they stay active for
--          good; the caller settles them with archive_corrupt.lua)
local found = {}
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE")) do
    found[#found + 1] = id
    found[#found + 1] = redis.call("HGET", ARGV[2] .. id, "msg")
end
return found
