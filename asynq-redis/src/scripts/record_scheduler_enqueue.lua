-- record_scheduler_enqueue: adds one event to the enqueue history of a scheduler entry, keeping
-- the newest events only (Go asynq's recordSchedulerEnqueueEvent).
--
-- KEYS[1] -> asynq:scheduler_history:<entry id>
-- ARGV[1] -> the enqueue time, Unix seconds (the member's score)
-- ARGV[2] -> the encoded SchedulerEnqueueEvent
-- ARGV[3] -> the most events kept (1000): all but the newest ARGV[3] - 1 go before the add
-- Returns: 1
redis.call("ZREMRANGEBYRANK", KEYS[1], 0, -ARGV[3])
redis.call("ZADD", KEYS[1], ARGV[1], ARGV[2])
return 1
