-- workflow_cancel: archives one waiting workflow task without running it, with the message
-- given (its own, with WORKFLOW_CANCELLED_ERROR recorded), counted nowhere; the tasks waiting for
-- it hear of its failure through the relay (see workflow.lua). A task in any other state is
-- left alone.
--
-- KEYS[1..7] -> as workflow_pass.lua's
-- ARGV[1..11] -> as workflow_pass.lua's
-- ARGV[12] -> the task ID
-- ARGV[13] -> its encoded TaskMessage as archived
-- Returns: 1 archived; 0 the task was not waiting (nothing written)
local q = workflow_queue(1)
if redis.call("HGET", q.task_prefix .. ARGV[12], "state") ~= "waiting" then
    return 0
end
archive_unrun(q, ARGV[12], ARGV[13])
return 1
