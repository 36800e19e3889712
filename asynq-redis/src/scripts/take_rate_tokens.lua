-- take_rate_tokens: refills a queue's rate-limit token bucket up to now and takes up to the
-- wanted number of whole tokens, or puts back tokens taken but not used (ours; Go asynq has no
-- rate limits). The arithmetic is asynq_core's TokenBucket::take and TokenBucket::give_back.
--
-- KEYS[1] -> asynq:{<qname>}:rate (hash: tokens, updated_at in Unix microseconds)
-- ARGV[1] -> now, Unix microseconds, from the caller's clock
-- ARGV[2] -> tokens gained per second (a decimal number above zero)
-- ARGV[3] -> the burst: the most tokens the bucket holds
-- ARGV[4] -> tokens wanted; a negative number puts that many back instead
-- ARGV[5] -> how long the key lives unused, milliseconds (a full bucket's refill time and more)
-- Returns: the number of tokens granted (0 when putting back)
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local wanted = tonumber(ARGV[4])
local state = redis.call("HMGET", KEYS[1], "tokens", "updated_at")
local tokens = tonumber(state[1])
local updated_at = tonumber(state[2])
if tokens == nil or updated_at == nil then
    if wanted < 0 then
        return 0
    end
    tokens = burst
    updated_at = now
end
local granted = 0
if wanted < 0 then
    tokens = math.min(burst, tokens - wanted)
else
    local elapsed = math.max(0, now - updated_at) / 1000000
    tokens = math.min(burst, tokens + elapsed * rate)
    updated_at = math.max(updated_at, now)
    granted = math.max(0, math.min(math.floor(tokens), wanted))
    tokens = tokens - granted
end
redis.call("HSET", KEYS[1], "tokens", string.format("%.17g", tokens), "updated_at", string.format("%d", updated_at))
redis.call("PEXPIRE", KEYS[1], ARGV[5])
return granted
