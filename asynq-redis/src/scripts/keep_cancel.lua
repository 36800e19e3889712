-- keep_cancel: keeps a request to cancel a task until it expires, so that a server that was not
-- subscribed to the cancel channel when the request was published still honours it (ours; Go
-- asynq only publishes). Drops expired requests, then the ones closest to expiry past the cap.
-- The key expires with its newest request, by Redis's clock.
--
-- KEYS[1] -> asynq:cancel_requests
-- ARGV[1] -> task ID
-- ARGV[2] -> now, Unix milliseconds
-- ARGV[3] -> the request's expiry, Unix milliseconds
-- ARGV[4] -> the most requests kept
-- ARGV[5] -> how long a request is kept, milliseconds
-- Returns: the number of requests kept
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
local excess = redis.call("ZCARD", KEYS[1]) - tonumber(ARGV[4])
if excess > 0 then
    redis.call("ZREMRANGEBYRANK", KEYS[1], 0, excess - 1)
end
redis.call("PEXPIRE", KEYS[1], ARGV[5])
return redis.call("ZCARD", KEYS[1])
