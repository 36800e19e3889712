-- write_scheduler_entries: replaces the entries of a periodic-task scheduler, to expire with its
-- heartbeat (Go asynq's writeSchedulerEntries). The caller first adds KEYS[1] to
-- asynq:schedulers, scored by its expiry.
--
-- KEYS[1] -> asynq:schedulers:{<scheduler id>}
-- ARGV[1] -> the TTL of the list, whole seconds
-- ARGV[2..] -> the encoded SchedulerEntry values, in the scheduler's order (each is pushed at
--              the head, so the list holds them in reverse, as Go's does)
-- Returns: 1
redis.call("DEL", KEYS[1])
for i = 2, #ARGV do
    redis.call("LPUSH", KEYS[1], ARGV[i])
end
redis.call("EXPIRE", KEYS[1], ARGV[1])
return 1
