-- settle_cancel: removes the kept request to cancel a task, as the server that cancels the task
-- does, and says whether it was kept and not expired: only one caller learns it was.
--
-- KEYS[1] -> asynq:cancel_requests
-- ARGV[1] -> task ID
-- ARGV[2] -> now, Unix milliseconds
-- Returns: 1 the request was kept and not expired; 0 otherwise
local expiry = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not expiry then
    return 0
end
redis.call("ZREM", KEYS[1], ARGV[1])
if tonumber(expiry) > tonumber(ARGV[2]) then
    return 1
end
return 0
