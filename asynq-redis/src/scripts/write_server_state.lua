-- write_server_state: records a server and its running tasks for a while (Go asynq's
-- writeServerState). The caller adds the keys to asynq:servers and asynq:workers first.
--
-- KEYS[1] -> asynq:servers:{<host>:<pid>:<server id>}
-- KEYS[2] -> asynq:workers:{<host>:<pid>:<server id>}
-- ARGV[1] -> the TTL of both records, whole seconds
-- ARGV[2] -> the encoded ServerInfo
-- ARGV[3..] -> pairs of (task ID, encoded WorkerInfo)
-- Returns: 1
redis.call("SETEX", KEYS[1], ARGV[1], ARGV[2])
redis.call("DEL", KEYS[2])
for i = 3, #ARGV, 2 do
    redis.call("HSET", KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call("EXPIRE", KEYS[2], ARGV[1])
return 1
