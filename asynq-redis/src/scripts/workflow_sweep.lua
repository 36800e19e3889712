-- workflow_sweep: notices the workflow tasks of one queue that others wait for and that settled
-- without our scripts (a Go server ran them, or an operator archived or deleted them), and
-- passes their outcomes on as workflow_settle.lua would (see workflow.lua). Looks at one slice
-- of the queue's open tasks per call, from a cursor, so that no call is long.
--
-- A task that is gone counts as succeeded without a result: a Go server deletes a task that
-- succeeded without retention, and nothing tells that apart from an operator's delete. A
-- completed task succeeded with its result; an archived one failed with its last error. Those
-- a call finds pass their outcomes on in ID order. In a queue that was removed (ARGV[14], read
-- by the caller from asynq:queues: a forced removal, ours or Go's, deletes the queue's tasks
-- but not those waiting for them), a task that is gone vanished instead: it passes nothing on
-- here, and is returned for the caller to archive its dependents naming it.
--
-- KEYS[1..7] -> as workflow_pass.lua's
-- ARGV[1..11] -> as workflow_pass.lua's
-- ARGV[12] -> the HSCAN cursor over asynq:{<q>}:wf:open ("0" to start)
-- ARGV[13] -> about how many open tasks to look at (HSCAN's COUNT)
-- ARGV[14] -> "1" when the queue was removed, else "0"
-- Returns: {the next cursor ("0" once the scan is complete), how many settled tasks were found,
--          then the IDs of those that vanished}
local q = workflow_queue(1)
local scan = redis.call("HSCAN", q.open, ARGV[12], "COUNT", ARGV[13])
local entries, settled, vanished = scan[2], {}, {}
local removed = ARGV[14] == "1"
for i = 1, #entries - 1, 2 do
    local id = entries[i]
    local fields = redis.call("HMGET", q.task_prefix .. id, "state", "msg", "result")
    local state = fields[1]
    if not state and removed then
        vanished[#vanished + 1] = id
    elseif not state or state == "completed" then
        settled[#settled + 1] = { id = id, ok = true, result = fields[3] or nil, err = "" }
    elseif state == "archived" then
        settled[#settled + 1] = { id = id, ok = false, err = message_field(fields[2], 7) }
    end
end
-- In ID order, as the memory broker's relay, whatever order the scan found them in.
table.sort(settled, function(a, b)
    return a.id < b.id
end)
for _, task in ipairs(settled) do
    workflow_settled(q, task.id, task.ok, task.result, task.err)
end
-- Vanished ones in ID order too, so that a task waiting for two is archived naming the first.
table.sort(vanished)
local reply = {scan[1], #settled}
for _, id in ipairs(vanished) do
    reply[#reply + 1] = id
end
return reply
