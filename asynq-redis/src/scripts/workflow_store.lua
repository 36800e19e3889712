-- workflow_store: stores the tasks of one workflow that live in one queue (all of them, or one
-- slice of at most 500): the tasks that wait for nothing as enqueue.lua stores a pending or
-- scheduled task, the others waiting (see workflow.lua), each with the lists of the tasks it
-- waits for and of those waiting for it. All or nothing: when any task's ID is taken in the
-- queue, nothing is written.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:scheduled
-- KEYS[3] -> asynq:{<q>}:idle_workers
-- KEYS[4] -> asynq:{<q>}:events
-- KEYS[5] -> asynq:{<q>}:wf:waiting
-- KEYS[6] -> asynq:{<q>}:wf:open (see workflow.lua)
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> the workflow key prefix, asynq:{<q>}:wf:
-- ARGV[3] -> now, Unix nanoseconds (a pending task's pending_since)
-- ARGV[4] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[5] -> the event stream's cap, or "" (see events.lua)
-- ARGV[6] -> now, Unix seconds (a waiting task's score)
-- ARGV[7..] -> one record per task: its ID; its encoded TaskMessage; "pending", "scheduled"
--              or "waiting"; the process time in Unix seconds when scheduled, else ""; for a
--              waiting task "fail" or "run" (its policy when a parent fails), else ""; for a
--              waiting task its TaskMessage as archived with PARENT_FAILED_ERROR, else ""; the
--              number of tasks it waits for, then queue and ID of each; the number of tasks
--              waiting for it, then queue and ID of each
-- Returns: 0 stored; n > 0, having written nothing: the n-th task's ID is taken.
local records = {}
local i = 7
while i <= #ARGV do
    local record = {
        id = ARGV[i], msg = ARGV[i + 1], kind = ARGV[i + 2], score = ARGV[i + 3], policy = ARGV[i + 4],
        cancel_msg = ARGV[i + 5],
    }
    local n_parents = tonumber(ARGV[i + 6])
    record.parents = { i + 7, i + 6 + 2 * n_parents }
    local at = i + 7 + 2 * n_parents
    local n_children = tonumber(ARGV[at])
    record.children = { at + 1, at + 2 * n_children }
    i = at + 1 + 2 * n_children
    records[#records + 1] = record
end
-- One variadic EXISTS tells whether any ID is taken (a call holds a few hundred tasks at most);
-- only then is each looked at.
local task_keys = {}
for n, record in ipairs(records) do
    task_keys[n] = ARGV[1] .. record.id
end
if #task_keys > 0 and redis.call("EXISTS", unpack(task_keys)) > 0 then
    for n, key in ipairs(task_keys) do
        if redis.call("EXISTS", key) == 1 then
            return n
        end
    end
end
-- Appends ARGV[range[1]..range[2]] to the list `key`, CHUNK at a time.
local function push_range(key, range)
    for first = range[1], range[2], CHUNK do
        redis.call("RPUSH", key, unpack(ARGV, first, math.min(first + CHUNK - 1, range[2])))
    end
end
-- Up to this many dependents are named in wf:open; more are listed apart.
local INLINE_CHILDREN = 64
local woken = false
for _, record in ipairs(records) do
    local key = ARGV[1] .. record.id
    if record.kind == "waiting" then
        local left = (record.parents[2] - record.parents[1] + 1) / 2
        redis.call("HSET", key, "msg", record.msg, "state", "waiting", "wf_left", left, "wf_policy", record.policy,
            "wf_cancel_msg", record.cancel_msg)
        push_range(ARGV[2] .. "parents:" .. record.id, record.parents)
        redis.call("ZADD", KEYS[5], ARGV[6], record.id)
    elseif record.kind == "scheduled" then
        redis.call("HSET", key, "msg", record.msg, "state", "scheduled")
        redis.call("ZADD", KEYS[2], record.score, record.id)
        log_event(KEYS[4], ARGV[5], "enqueued", record.id, record.msg)
    else
        redis.call("HSET", key, "msg", record.msg, "state", "pending", "pending_since", ARGV[3])
        woken = redis.call("LPUSH", KEYS[1], record.id) == 1 or woken
        log_event(KEYS[4], ARGV[5], "enqueued", record.id, record.msg)
    end
    local n_children = (record.children[2] - record.children[1] + 1) / 2
    if n_children > INLINE_CHILDREN then
        push_range(ARGV[2] .. "children:" .. record.id, record.children)
        redis.call("HSET", KEYS[6], record.id, "*")
    elseif n_children > 0 then
        local children = table.concat({ unpack(ARGV, record.children[1], record.children[2]) }, "\n")
        redis.call("HSET", KEYS[6], record.id, children)
    end
end
if woken and redis.call("DEL", KEYS[3]) == 1 then
    redis.call("PUBLISH", ARGV[4], "")
end
return 0
