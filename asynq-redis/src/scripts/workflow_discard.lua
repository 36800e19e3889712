-- workflow_discard: takes back tasks of one queue that a workflow store wrote before a later
-- call of the same store failed: each task still waiting, or still pending or scheduled (not
-- yet taken by a worker), is deleted with its workflow lists. A task already taken is left to
-- run.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:scheduled
-- KEYS[3] -> asynq:{<q>}:wf:waiting
-- KEYS[4] -> asynq:{<q>}:wf:open
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> the workflow key prefix, asynq:{<q>}:wf:
-- ARGV[3..] -> the IDs of the tasks to take back
-- Returns: how many tasks were deleted.
local deleted = 0
for i = 3, #ARGV do
    local id = ARGV[i]
    local key = ARGV[1] .. id
    local state = redis.call("HGET", key, "state")
    local gone
    if state == "waiting" then
        gone = redis.call("ZREM", KEYS[3], id) == 1
    elseif state == "pending" then
        gone = redis.call("LREM", KEYS[1], "1", id) == 1
    elseif state == "scheduled" then
        gone = redis.call("ZREM", KEYS[2], id) == 1
    end
    if gone then
        redis.call("DEL", key, ARGV[2] .. "parents:" .. id, ARGV[2] .. "children:" .. id)
        redis.call("HDEL", KEYS[4], id)
        deleted = deleted + 1
    end
end
return deleted
