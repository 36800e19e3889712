-- record_task_metrics: adds what a server's attempts of some task types added up to into one
-- bucket of a queue's per task type metrics (ours; Go asynq neither writes nor reads them).
--
-- The bucket is a hash of four fields per task type, `<type>:runs`, `<type>:failed`, `<type>:ms`
-- (run times added up) and `<type>:max` (the longest), plus `types`, how many task types it
-- keeps (the type "" included nowhere: it is where a full bucket counts the types it has no room
-- for, and no task has a blank type). Every write keeps the bucket ARGV[1] more seconds.
--
-- KEYS[1] -> <ns>:{<q>}:metrics:<minute|hour>:<bucket start, Unix seconds>
-- ARGV[1] -> how long to keep the bucket, seconds
-- ARGV[2] -> the most task types a bucket keeps
-- ARGV[3] -> the longest task type name kept, bytes
-- ARGV[4..] -> per task type, five entries: its name, runs, failed, run time ms, longest ms
-- Returns: 1
local cap = tonumber(ARGV[2])
local longest_name = tonumber(ARGV[3])
for i = 4, #ARGV, 5 do
    local name = ARGV[i]
    if name ~= "" and redis.call("HEXISTS", KEYS[1], name .. ":runs") == 0 then
        local kept = tonumber(redis.call("HGET", KEYS[1], "types") or "0") or 0
        if kept < cap and #name <= longest_name then
            redis.call("HINCRBY", KEYS[1], "types", 1)
        else
            name = ""
        end
    end
    redis.call("HINCRBY", KEYS[1], name .. ":runs", ARGV[i + 1])
    redis.call("HINCRBY", KEYS[1], name .. ":failed", ARGV[i + 2])
    redis.call("HINCRBY", KEYS[1], name .. ":ms", ARGV[i + 3])
    local max = tonumber(redis.call("HGET", KEYS[1], name .. ":max") or "0") or 0
    if tonumber(ARGV[i + 4]) > max then
        redis.call("HSET", KEYS[1], name .. ":max", ARGV[i + 4])
    end
end
redis.call("EXPIRE", KEYS[1], ARGV[1])
return 1
