-- request_server: keeps an operator's request (quiet or stop) for one server, read and deleted
-- by that server's next heartbeat (take_server_request.lua). A stop kept before stays a stop
-- when a quiet is asked after it. Ours only: Go asynq's servers never read the key.
--
-- KEYS[1] -> asynq:server_requests:{<server id>}
-- ARGV[1] -> the request: "quiet" or "stop"
-- ARGV[2] -> when the request expires, Unix seconds of the broker's clock
-- ARGV[3] -> now, Unix seconds of the broker's clock
-- ARGV[4] -> the key's TTL, whole seconds (at least 1), so that it goes should nobody read it
-- Returns: the request kept, "quiet" or "stop"
local request = ARGV[1]
local kept = redis.call("GET", KEYS[1])
if kept then
    local name, expiry = string.match(kept, "^(%a+) (%-?%d+)$")
    if name == "stop" and tonumber(expiry) >= tonumber(ARGV[3]) then
        request = "stop"
    end
end
redis.call("SET", KEYS[1], request .. " " .. ARGV[2], "EX", ARGV[4])
return request
