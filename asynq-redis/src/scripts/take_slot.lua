-- take_slot: takes a slot of a shared concurrency limit for a task, if fewer than the limit of
-- live holders hold one (ours; Go asynq has no shared limits).
--
-- The sorted set holds each holder's task ID, scored by when its hold expires. Holds that expired
-- are dropped first; a holder that holds a slot already keeps it, renewed.
--
-- KEYS[1] -> <ns>:slots:<key>   sorted set of holders by hold expiry (Unix milliseconds)
-- ARGV[1] -> the holder's task ID
-- ARGV[2] -> the limit, how many may hold a slot at once
-- ARGV[3] -> now, Unix milliseconds (the caller's clock)
-- ARGV[4] -> when the hold expires, Unix milliseconds
-- Returns: 1 the holder holds a slot until ARGV[4]; 0 every slot is held (nothing written but
--          the dropping of expired holds)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[3])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) then
    redis.call("ZADD", KEYS[1], ARGV[4], ARGV[1])
    return 1
end
return 0
