-- take_server_request: reads and deletes the request kept for one server (request_server.lua),
-- so that the server acts on each once.
--
-- KEYS[1] -> asynq:server_requests:{<server id>}
-- ARGV: none
-- Returns: the kept value, "<quiet|stop> <expiry in Unix seconds>", or false when none is kept
local kept = redis.call("GET", KEYS[1])
if kept then
    redis.call("DEL", KEYS[1])
end
return kept
