-- workflow_settle: settles tasks of one queue exactly as done_batch.lua or settle_batch.lua does
-- (prepended as the body of `local function settle(KEYS, ARGV)`, see workflow.rs), and passes
-- on the outcome of each workflow task among them that settled for good to the tasks waiting
-- for it (workflow.lua), in the same step: the parent's outcome is never lost between its
-- settling and its dependents hearing of it.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:archived
-- KEYS[3] -> asynq:{<q>}:idle_workers
-- KEYS[4] -> asynq:{<q>}:events
-- KEYS[5] -> asynq:{<q>}:wf:outbox
-- KEYS[6] -> asynq:{<q>}:wf:waiting
-- KEYS[7] -> asynq:{<q>}:wf:open
-- KEYS[8..] -> the settle script's KEYS
-- ARGV[1] -> h, how many of the arguments after it are this script's own
-- ARGV[2] -> the queue name
-- ARGV[3] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[4] -> the workflow key prefix, asynq:{<q>}:wf:
-- ARGV[5] -> now, Unix seconds
-- ARGV[6] -> now, Unix nanoseconds
-- ARGV[7] -> the archive's age cutoff, Unix seconds
-- ARGV[8] -> the archive's size limit (10000)
-- ARGV[9] -> how long an outcome is kept, seconds
-- ARGV[10] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[11] -> the finish channel, asynq:{<q>}:finished
-- ARGV[12] -> the event stream's cap, or "" (see events.lua)
-- ARGV[13..1+h] -> per workflow task settling for good, 4 values: its position among the
--                  settle script's tasks (from 1), its ID, "1" (it succeeded) or "0" (it is
--                  archived), and the error it is archived with (or "")
-- ARGV[2+h..] -> the settle script's ARGV
-- Returns: the settle script's replies, one per task, in order.
local h = tonumber(ARGV[1])
local q = workflow_queue(2)
-- The results, read before the settle deletes the hashes of tasks that leave none.
local results = {}
for i = 13, 1 + h, 4 do
    if ARGV[i + 2] == "1" then
        results[i] = redis.call("HGET", q.task_prefix .. ARGV[i + 1], "result")
    end
end
local settle_keys, settle_argv = {}, {}
for i = 8, #KEYS do
    settle_keys[#settle_keys + 1] = KEYS[i]
end
for i = 2 + h, #ARGV do
    settle_argv[#settle_argv + 1] = ARGV[i]
end
local replies = settle(settle_keys, settle_argv)
for i = 13, 1 + h, 4 do
    if replies[tonumber(ARGV[i])] == 1 then
        workflow_settled(q, ARGV[i + 1], ARGV[i + 2] == "1", results[i] or nil, ARGV[i + 3])
    end
end
return replies
