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
local q = {
    name = ARGV[1], task_prefix = ARGV[2], wf_prefix = ARGV[3], now = ARGV[4], now_ns = ARGV[5],
    archive_cutoff = ARGV[6], archive_max = ARGV[7], ttl = ARGV[8], ready = ARGV[9], finished = ARGV[10],
    cap = ARGV[11], pending = KEYS[1], archived = KEYS[2], idle = KEYS[3], events = KEYS[4], outbox = KEYS[5],
    waiting = KEYS[6], open = KEYS[7],
}
if redis.call("HGET", q.task_prefix .. ARGV[12], "state") ~= "waiting" then
    return 0
end
archive_unrun(q, ARGV[12], ARGV[13])
return 1
