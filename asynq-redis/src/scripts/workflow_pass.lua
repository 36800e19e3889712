-- workflow_pass: the relay's step in a child's slot: tells waiting tasks of one queue that a
-- parent (of any queue) settled for good, releasing each whose parents have all settled and
-- archiving, without running it, each that a failed parent fails (see workflow.lua). Idempotent:
-- a task hears of each parent once, so a relay repeated after a crash changes nothing more.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:archived
-- KEYS[3] -> asynq:{<q>}:idle_workers
-- KEYS[4] -> asynq:{<q>}:events
-- KEYS[5] -> asynq:{<q>}:wf:outbox
-- KEYS[6] -> asynq:{<q>}:wf:waiting
-- KEYS[7] -> asynq:{<q>}:wf:open
-- ARGV[1] -> the queue name
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the workflow key prefix, asynq:{<q>}:wf:
-- ARGV[4] -> now, Unix seconds
-- ARGV[5] -> now, Unix nanoseconds
-- ARGV[6] -> the archive's age cutoff, Unix seconds
-- ARGV[7] -> the archive's size limit (10000)
-- ARGV[8] -> how long an outcome is kept, seconds
-- ARGV[9] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[10] -> the finish channel, asynq:{<q>}:finished
-- ARGV[11] -> the event stream's cap, or "" (see events.lua)
-- ARGV[12] -> the parent's queue
-- ARGV[13] -> the parent's ID
-- ARGV[14] -> "1" the parent succeeded, "0" it failed
-- ARGV[15..] -> the IDs of the waiting tasks of this queue that wait for it
-- Returns: how many tasks were released or archived.
local q = workflow_queue(1)
local changed = 0
local mark = "wf_p:" .. #ARGV[12] .. ":" .. ARGV[12] .. ":" .. ARGV[13]
for i = 15, #ARGV do
    if workflow_pass(q, ARGV[i], mark, ARGV[12], ARGV[13], ARGV[14] == "1") > 0 then
        changed = changed + 1
    end
end
return changed
