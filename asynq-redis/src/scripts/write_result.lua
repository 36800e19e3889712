-- write_result: stores a handler's result in its task hash.
--
-- KEYS[1] -> asynq:{<q>}:t:<id>
-- ARGV[1] -> the result bytes
-- Returns: 1 stored; 0 the task does not exist (Go would create a hash holding only the result)
if redis.call("EXISTS", KEYS[1]) == 0 then
    return 0
end
redis.call("HSET", KEYS[1], "result", ARGV[1])
return 1
