-- workflow: helpers prepended (after common.lua, message.lua, manage_common.lua and events.lua)
-- to the scripts that pass a settled task's outcome on to the tasks waiting for it (ours; Go
-- asynq has no workflows).
--
-- A waiting task is a task hash asynq:{<q>}:t:<id> in state "waiting", which no container of
-- Go's lists, with `wf_left` (how many parents have not settled), `wf_policy` ("fail": it is
-- archived when a parent fails; "run": it runs anyway) and `wf_cancel_msg` (its message as
-- archived with PARENT_FAILED_ERROR); the relay adds one `wf_p:<len(queue)>:<queue>:<id>` mark
-- per parent it told, so that telling again changes nothing. The hash asynq:{<q>}:wf:open maps
-- each task others wait for, until it passes its outcome on (once), to those tasks:
-- "queue\nID\nqueue\nID...", or "*" when they are many and listed in
-- asynq:{<q>}:wf:children:<id> (queue, ID, queue, ID, ...), which is also where the relay reads
-- them. A task that waits for others has asynq:{<q>}:wf:parents:<id> (queue, ID, ...), in order,
-- expiring with its parents' outcomes once it is released. asynq:{<q>}:wf:outcome:<id> is how a
-- task others wait for settled: "1" and its result, "2" (it succeeded and wrote none) or "0"
-- and its error, expiring after q.ttl. The outbox asynq:{<q>}:wf:outbox lists "<1|0>:<id>" for
-- each settled task whose dependents the relay is to tell (workflow_pass.lua, in each
-- dependent's slot). A task nothing waits for has its outcome kept too, as "2" (it succeeded;
-- its result is not kept) or "0" and its error, for operators.
--
-- KEYS -> none of its own; the functions take `q`, a table of the including script's queue:
--         q.name (the queue), q.task_prefix (asynq:{<q>}:t:), q.wf_prefix (asynq:{<q>}:wf:),
--         q.pending, q.archived, q.idle (asynq:{<q>}:idle_workers), q.events, q.cap (the event
--         stream's cap or ""), q.outbox, q.waiting (asynq:{<q>}:wf:waiting), q.open
--         (asynq:{<q>}:wf:open), q.ready (the wake-up channel), q.finished (the finish
--         channel), q.now (Unix seconds), q.now_ns (Unix nanoseconds), q.archive_cutoff and
--         q.archive_max (archive.lua's ARGV[4] and ARGV[5]), q.ttl (how long an outcome is
--         kept, seconds)
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- The `q` of a script whose KEYS[1..7] are workflow_pass.lua's and whose ARGV from `first` on
-- are workflow_pass.lua's ARGV[1..11].
local function workflow_queue(first)
    local function arg(n)
        return ARGV[first + n - 1]
    end
    return {
        name = arg(1), task_prefix = arg(2), wf_prefix = arg(3), now = arg(4), now_ns = arg(5),
        archive_cutoff = arg(6), archive_max = arg(7), ttl = arg(8), ready = arg(9), finished = arg(10),
        cap = arg(11), pending = KEYS[1], archived = KEYS[2], idle = KEYS[3], events = KEYS[4], outbox = KEYS[5],
        waiting = KEYS[6], open = KEYS[7],
    }
end

-- Defined below; the two call each other.
local workflow_pass

-- Leaves the dependents `children` (wf:open's value) of task `id` to the relay: in the
-- children list, and `id` in the outbox with `ok`.
local function to_relay(q, id, children, ok)
    if children ~= "*" then
        local list = q.wf_prefix .. "children:" .. id
        for part in string.gmatch(children, "[^\n]+") do
            redis.call("RPUSH", list, part)
        end
    end
    redis.call("RPUSH", q.outbox, (ok and "1:" or "0:") .. id)
end

-- Archives the waiting task `child` of `q` without running it, storing `msg` (its message
-- with the error recorded), counted nowhere; the tasks waiting for it hear of its failure
-- through the relay, so that no step walks a whole workflow.
local function archive_unrun(q, child, msg)
    local key = q.task_prefix .. child
    redis.call("HSET", key, "msg", msg, "state", "archived")
    redis.call("HDEL", key, "wf_cancel_msg", "wf_left", "wf_policy")
    redis.call("ZREM", q.waiting, child)
    -- Kept for an operator who runs it again from the archive, as long as its parents' outcomes.
    redis.call("EXPIRE", q.wf_prefix .. "parents:" .. child, q.ttl)
    redis.call("ZADD", q.archived, q.now, child)
    trim_archive(q.archived, q.archive_cutoff, q.archive_max, q.task_prefix)
    log_failure(q.events, q.cap, "archived", child, msg)
    notify_waiters(key, q.finished, child)
    local children = redis.call("HGET", q.open, child)
    if children then
        redis.call("HDEL", q.open, child)
        redis.call("SET", q.wf_prefix .. "outcome:" .. child, "0" .. message_field(msg, 7), "EX", q.ttl)
        to_relay(q, child, children, false)
    end
end

-- Records that task `id` of `q` settled for good (`ok`, with `result` or `err`) and, if others
-- wait for it, passes that on, once: in this step to those of this queue named in wf:open,
-- through the relay to the others. Passes nothing on for a task that passed its outcome on
-- already.
local function workflow_settled(q, id, ok, result, err)
    local children = redis.call("HGET", q.open, id)
    if not children then
        -- Nothing waits for it (or it passed its outcome on already): its outcome is kept for
        -- operators only, without its result, so that one that succeeded without retention is
        -- told apart from one deleted.
        local kept = q.wf_prefix .. "outcome:" .. id
        if redis.call("EXISTS", kept) == 0 then
            redis.call("SET", kept, ok and "2" or ("0" .. err), "EX", q.ttl)
        end
        return
    end
    redis.call("HDEL", q.open, id)
    local outcome
    if not ok then
        outcome = "0" .. err
    elseif result then
        outcome = "1" .. result
    else
        outcome = "2"
    end
    redis.call("SET", q.wf_prefix .. "outcome:" .. id, outcome, "EX", q.ttl)
    if children == "*" then
        to_relay(q, id, children, ok)
        return
    end
    local parts, elsewhere = {}, {}
    for part in string.gmatch(children, "[^\n]+") do
        parts[#parts + 1] = part
    end
    for i = 1, #parts - 1, 2 do
        if parts[i] == q.name then
            -- A child this cancels passes its own failure on through the relay.
            workflow_pass(q, parts[i + 1], nil, q.name, id, ok)
        else
            elsewhere[#elsewhere + 1] = parts[i] .. "\n" .. parts[i + 1]
        end
    end
    if #elsewhere > 0 then
        to_relay(q, id, table.concat(elsewhere, "\n"), ok)
    end
end

-- Tells the waiting task `child` of `q` that its parent `parent_id` of queue `parent_queue`
-- settled (`ok`). With a `mark` (the relay's, which may repeat a step), a parent already heard
-- of is ignored; the settling step passes an outcome on once and needs none. Returns 0 when nothing changed, 1 when
-- the task was released (made pending), 2 when it was archived without running.
workflow_pass = function(q, child, mark, parent_queue, parent_id, ok)
    local key = q.task_prefix .. child
    if mark and redis.call("HSETNX", key, mark, "1") == 0 then
        return 0
    end
    -- Only a waiting task has `wf_left`, at least 1: on any other, the decrement makes it
    -- negative (on a task that is gone, it makes a hash of it alone), and is taken back.
    local left = redis.call("HINCRBY", key, "wf_left", -1)
    if left < 0 then
        if mark then
            redis.call("HDEL", key, "wf_left", mark)
        else
            redis.call("HDEL", key, "wf_left")
        end
        return 0
    end
    if not ok and redis.call("HGET", key, "wf_policy") == "fail" then
        archive_unrun(q, child, redis.call("HGET", key, "wf_cancel_msg"))
        return 2
    end
    if left > 0 then
        return 0
    end
    redis.call("HSET", key, "state", "pending", "pending_since", q.now_ns)
    redis.call("HDEL", key, "wf_cancel_msg", "wf_left", "wf_policy")
    redis.call("ZREM", q.waiting, child)
    redis.call("EXPIRE", q.wf_prefix .. "parents:" .. child, q.ttl)
    if redis.call("LPUSH", q.pending, child) == 1 and redis.call("DEL", q.idle) == 1 then
        redis.call("PUBLISH", q.ready, "")
    end
    if q.cap ~= "" then
        log_event(q.events, q.cap, "enqueued", child, redis.call("HGET", key, "msg"))
    end
    return 1
end
