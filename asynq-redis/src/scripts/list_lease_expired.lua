-- list_lease_expired: the active tasks of one queue whose lease expired (Go asynq's
-- listLeaseExpired), and which of them no handler started. Writes nothing.
--
-- A lease scored half a second or more past its second (dequeue.lua's taken score) belongs to a
-- task no handler has started; a whole-second score to a started task (or one a Go server
-- leased), and so does a fraction under a half (a fetch's token, dequeue.lua's started score).
--
-- KEYS[1] -> asynq:{<q>}:lease
-- ARGV[1] -> the cutoff: leases scored at or before it have expired, Unix seconds plus 0.5, so
--            that a lease no handler started expires in the second it names, as a started one
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- Returns: three arrays. The first is flat, of pairs: the task ID, then its encoded
--          TaskMessage, or nil when the ID has no task hash or the hash no `msg` (Go skips those,
--          and they stay active for good; the caller settles them with archive_corrupt.lua). The
--          second holds the IDs among them that no handler started. The third holds, for each
--          pair, the task's stall count (the hash's `stalls`, a field of ours; 0 when absent).
local found, unstarted, stalls = {}, {}, {}
local expired = redis.call("ZRANGE", KEYS[1], "-inf", ARGV[1], "BYSCORE", "WITHSCORES")
for i = 1, #expired, 2 do
    local id = expired[i]
    found[#found + 1] = id
    local fields = redis.call("HMGET", ARGV[2] .. id, "msg", "stalls")
    found[#found + 1] = fields[1]
    stalls[#stalls + 1] = tonumber(fields[2]) or 0
    if tonumber(expired[i + 1]) % 1 >= 0.5 then
        unstarted[#unstarted + 1] = id
    end
end
return {found, unstarted, stalls}
