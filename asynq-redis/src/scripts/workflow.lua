-- workflow: helpers prepended (after common.lua, message.lua and events.lua) to the scripts
-- that store workflows and pass a settled task's outcome on to the tasks waiting for it (ours;
-- Go asynq has no workflows).
--
-- A waiting task is a task hash asynq:{<q>}:t:<id> in state "waiting", which no container of
-- Go's lists, with `wf_left` (how many parents have not settled), `wf_policy` ("fail": it is
-- archived when a parent fails; "run": it runs anyway), `wf_cancel_msg` (its message as
-- archived with PARENT_FAILED_ERROR) and one `wf_p:<len(queue)>:<queue>:<id>` mark per parent
-- heard of. Per workflow task, in its queue's slot: asynq:{<q>}:wf:parents:<id> and
-- asynq:{<q>}:wf:children:<id> list queue, ID, queue, ID, ... of the tasks it waits for (until
-- it settles) and of those that wait for it (until they heard of it); asynq:{<q>}:wf:outcome:<id>
-- is how it settled for good (`ok` "1" or "0", `result` or `error`), kept for a TTL. The outbox
-- asynq:{<q>}:wf:outbox lists "<ok>:<id>" for each settled task whose children are left to the
-- relay (workflow_pass.lua, run by a server in each child's slot).
--
-- KEYS -> none of its own; the functions take `q`, a table of the including script's queue:
--         q.task_prefix (asynq:{<q>}:t:), q.wf_prefix (asynq:{<q>}:wf:), q.pending, q.archived,
--         q.idle (asynq:{<q>}:idle_workers), q.waiting (asynq:{<q>}:wf:waiting), q.open
--         (asynq:{<q>}:wf:open: the tasks others wait for that have not settled), q.events, q.cap (the event stream's cap or ""),
--         q.outbox, q.ready (the wake-up channel), q.finished (the finish channel), q.name (the
--         queue), q.now (Unix seconds), q.now_ns (Unix nanoseconds), q.archive_cutoff and
--         q.archive_max (archive.lua's ARGV[4] and ARGV[5]), q.ttl (the outcome's TTL, seconds)
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- How many dependents, all in its own queue, a settling task releases in its own step; more,
-- or any in another queue, go to the relay.
local INLINE_CHILDREN = 64

-- Defined below; the two call each other.
local workflow_pass

-- Records that task `id` of `q` settled for good (`ok`, with `result` or `err`), and passes that
-- on to the tasks waiting for it: in this step while they are few and all in this queue
-- (`inline`), through the outbox otherwise.
local function workflow_settled(q, id, ok, result, err, inline)
    local outcome = q.wf_prefix .. "outcome:" .. id
    redis.call("DEL", outcome, q.wf_prefix .. "parents:" .. id)
    redis.call("ZREM", q.open, id)
    if ok then
        redis.call("HSET", outcome, "ok", "1")
        if result then
            redis.call("HSET", outcome, "result", result)
        end
    else
        redis.call("HSET", outcome, "ok", "0", "error", err)
    end
    redis.call("EXPIRE", outcome, q.ttl)
    local children_key = q.wf_prefix .. "children:" .. id
    local n = redis.call("LLEN", children_key)
    if n == 0 then
        return
    end
    if inline and n <= 2 * INLINE_CHILDREN then
        local children = redis.call("LRANGE", children_key, 0, -1)
        local here = true
        for i = 1, #children, 2 do
            here = here and children[i] == q.name
        end
        if here then
            for i = 2, #children, 2 do
                -- Cancelled children pass their own failure on through the outbox.
                workflow_pass(q, children[i], q.name, id, ok)
            end
            redis.call("DEL", children_key)
            return
        end
    end
    redis.call("RPUSH", q.outbox, (ok and "1:" or "0:") .. id)
end

-- Tells the waiting task `child` of `q` that its parent `parent_id` of queue `parent_queue`
-- settled (`ok`). Returns 0 when nothing changed (it is not waiting, or heard of this parent
-- already), 1 when it was released (made pending), 2 when it was archived without running.
workflow_pass = function(q, child, parent_queue, parent_id, ok)
    local key = q.task_prefix .. child
    if redis.call("HGET", key, "state") ~= "waiting" then
        return 0
    end
    local mark = "wf_p:" .. #parent_queue .. ":" .. parent_queue .. ":" .. parent_id
    if redis.call("HSETNX", key, mark, ok and "1" or "0") == 0 then
        return 0
    end
    local left = redis.call("HINCRBY", key, "wf_left", -1)
    if left <= 0 or (not ok and redis.call("HGET", key, "wf_policy") == "fail") then
        redis.call("ZREM", q.waiting, child)
    end
    if not ok and redis.call("HGET", key, "wf_policy") == "fail" then
        local msg = redis.call("HGET", key, "wf_cancel_msg")
        redis.call("HSET", key, "msg", msg, "state", "archived")
        redis.call("HDEL", key, "wf_cancel_msg", "wf_left", "wf_policy")
        redis.call("ZADD", q.archived, q.now, child)
        for _, trimmed in ipairs(redis.call("ZRANGE", q.archived, "-inf", q.archive_cutoff, "BYSCORE")) do
            redis.call("DEL", q.task_prefix .. trimmed)
            redis.call("ZREM", q.archived, trimmed)
        end
        for _, trimmed in ipairs(redis.call("ZRANGE", q.archived, 0, -tonumber(q.archive_max))) do
            redis.call("DEL", q.task_prefix .. trimmed)
            redis.call("ZREM", q.archived, trimmed)
        end
        log_failure(q.events, q.cap, "archived", child, msg)
        notify_waiters(key, q.finished, child)
        workflow_settled(q, child, false, nil, message_field(msg, 7), false)
        return 2
    end
    if left > 0 then
        return 0
    end
    redis.call("HSET", key, "state", "pending", "pending_since", q.now_ns)
    redis.call("HDEL", key, "wf_cancel_msg", "wf_left", "wf_policy")
    if redis.call("LPUSH", q.pending, child) == 1 and redis.call("DEL", q.idle) == 1 then
        redis.call("PUBLISH", q.ready, "")
    end
    if q.cap ~= "" then
        log_event(q.events, q.cap, "enqueued", child, redis.call("HGET", key, "msg"))
    end
    return 1
end
