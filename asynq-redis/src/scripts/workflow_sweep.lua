-- workflow_sweep: notices the workflow tasks of one queue that others wait for and that settled
-- without our scripts (a Go server ran them, or an operator archived or deleted them), and
-- passes their outcomes on as workflow_settle.lua would (see workflow.lua). Looks at one slice
-- of the queue's open tasks per call, from a cursor, so that no call is long.
--
-- A task that is gone counts as succeeded without a result: a Go server deletes a task that
-- succeeded without retention, and nothing tells that apart from an operator's delete. A
-- completed task succeeded with its result; an archived one failed with its last error.
--
-- KEYS[1..7] -> as workflow_pass.lua's
-- ARGV[1..11] -> as workflow_pass.lua's
-- ARGV[12] -> the cursor: the rank in asynq:{<q>}:wf:open to start at
-- ARGV[13] -> how many open tasks to look at
-- Returns: {the next cursor (0 once the end was reached), how many settled tasks were found}
local q = {
    name = ARGV[1], task_prefix = ARGV[2], wf_prefix = ARGV[3], now = ARGV[4], now_ns = ARGV[5],
    archive_cutoff = ARGV[6], archive_max = ARGV[7], ttl = ARGV[8], ready = ARGV[9], finished = ARGV[10],
    cap = ARGV[11], pending = KEYS[1], archived = KEYS[2], idle = KEYS[3], events = KEYS[4], outbox = KEYS[5],
    waiting = KEYS[6], open = KEYS[7],
}
local first, count = tonumber(ARGV[12]), tonumber(ARGV[13])
local ids = redis.call("ZRANGE", q.open, first, first + count - 1)
local settled = 0
for _, id in ipairs(ids) do
    local fields = redis.call("HMGET", q.task_prefix .. id, "state", "msg", "result")
    local state = fields[1]
    if not state then
        workflow_settled(q, id, true, nil, "", true)
        settled = settled + 1
    elseif state == "completed" then
        workflow_settled(q, id, true, fields[3] or nil, "", true)
        settled = settled + 1
    elseif state == "archived" then
        workflow_settled(q, id, false, nil, message_field(fields[2], 7), true)
        settled = settled + 1
    end
end
if #ids < count then
    return {0, settled}
end
-- The settled ones left the set: the next slice starts that much earlier.
return {first + count - settled, settled}
