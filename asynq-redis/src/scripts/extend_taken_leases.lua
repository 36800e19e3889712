-- extend_taken_leases: moves the leases of tasks no handler has started yet (tasks a worker
-- took ahead) to a new expiry, keeping each lease's stage: a task a handler started meanwhile
-- stays started (a plain ZADD would turn it back into a task not started, and an expired lease
-- would then cost its attempt nothing). See dequeue.lua for the half-second mark.
--
-- KEYS[1] -> asynq:{<q>}:lease
-- ARGV[1] -> the new lease expiry, Unix seconds (a whole number)
-- ARGV[2..] -> task IDs; those no longer leased are ignored
-- Returns: the number of leases extended
local extended = 0
for i = 2, #ARGV do
    local score = redis.call("ZSCORE", KEYS[1], ARGV[i])
    if score then
        local mark = (tonumber(score) % 1 ~= 0) and ".5" or ""
        redis.call("ZADD", KEYS[1], ARGV[1] .. mark, ARGV[i])
        extended = extended + 1
    end
end
return extended
