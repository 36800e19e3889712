-- workflow_cancel: archives waiting workflow tasks of one queue without running them, each with
-- the message given (its own, with the error recorded: WORKFLOW_CANCELLED_ERROR, or the error
-- naming a parent that vanished), counted nowhere, all in one step; the tasks waiting for them
-- hear of their failures through the relay (see workflow.lua). A task in any other state is
-- left alone.
--
-- KEYS[1..7] -> as workflow_pass.lua's
-- ARGV[1..11] -> as workflow_pass.lua's
-- ARGV[12..] -> per task, 2 values: its ID, and its encoded TaskMessage as archived
-- Returns: how many tasks were archived (those not waiting were left as they were)
local q = workflow_queue(1)
local archived = 0
for i = 12, #ARGV - 1, 2 do
    if redis.call("HGET", q.task_prefix .. ARGV[i], "state") == "waiting" then
        archive_unrun(q, ARGV[i], ARGV[i + 1])
        archived = archived + 1
    end
end
return archived
