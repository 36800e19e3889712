-- release_slot: gives back a task's slot of a shared concurrency limit and, if it held one,
-- publishes the slot key so that servers waiting for a slot of it look again (ours; Go asynq has
-- no shared limits).
--
-- KEYS[1] -> <ns>:slots:<key>   sorted set of holders by hold expiry (Unix milliseconds)
-- ARGV[1] -> the holder's task ID
-- ARGV[2] -> <ns>:slot_freed, the channel waiting servers listen on
-- ARGV[3] -> the slot key, the message
-- Returns: 1 the holder held a slot, now given back; 0 it held none (nothing written)
if redis.call("ZREM", KEYS[1], ARGV[1]) == 1 then
    redis.call("PUBLISH", ARGV[2], ARGV[3])
    return 1
end
return 0
