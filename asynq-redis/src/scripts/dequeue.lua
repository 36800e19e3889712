-- dequeue: leases up to ARGV[3] pending tasks of one queue to a worker (Go asynq's dequeue,
-- repeated; each task gets exactly the state, lease and bookkeeping Go's gives one).
--
-- The tasks are taken from the tail of the pending list in one RPOP with a count (Redis 6.2),
-- rather than one LMOVE each, and pushed onto the active list in the order one LMOVE each would
-- leave; the leases are added by one ZADD. Only the task hashes need a command per task.
--
-- Each task's `progress` (write_progress.lua's) goes with its `pending_since`: an attempt starts
-- with none.
--
-- Each lease is scored at ARGV[1], half a second past its whole-second expiry: the half second
-- says no handler has started the task (LeaseStage::Taken); extend_leases rewrites the score
-- to the whole second before a handler starts it. Go compares lease scores only with
-- whole-second cutoffs (ZRANGEBYSCORE), so to Go such a lease expires a second later, well
-- within its recoverer's 30 s grace; Go reads nothing else of the score. The first ARGV[5]
-- tasks with a message (next to run first), those the worker runs at once, are scored ARGV[6]
-- instead: started in this step (LeaseStage::Started), which saves the worker its extend_leases
-- call. ARGV[6] is the whole second plus the fetch's token, a fraction under a half that no
-- other lease of the queue holds: if this reply is lost, the worker finds these tasks by it and
-- gives them back (give_back_fetch.lua) rather than leave them started with no handler. When
-- another lease holds that score already (a fetch that drew the same token for the same second),
-- nothing is started here: the tasks are taken, and the reply says so.
--
-- A queue that gives fewer tasks than asked for (or none, paused) gets its idle mark
-- (mark_idle.lua's) in the same step: the server then treats it as quiet and skips it until a
-- producer's wake-up says otherwise (broker/quiet.rs). The caller leaves the mark alone (ARGV[4]
-- "") while it knows the mark to be in place: it set the mark, and every wake-up since came
-- from a script that keeps it (pubsub.rs, MARK_KEPT).
--
-- Prioritized tasks (priority.lua) come first when their priority is above the default, after
-- the list's tasks when it is below. A queue without any costs nothing more: the one EXISTS
-- that looks for the paused mark looks for the prioritized set too, and only a queue that has
-- one of the two pays a second.
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:paused
-- KEYS[3] -> asynq:{<q>}:active
-- KEYS[4] -> asynq:{<q>}:lease
-- KEYS[5] -> asynq:{<q>}:idle_workers
-- KEYS[6] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[7] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the lease score: the lease expiry in Unix seconds, plus 0.5 (not started)
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the most tasks to take, at least 1
-- ARGV[4] -> how long the idle mark lasts when fewer than ARGV[3] pairs are returned, whole
--            seconds; "" to set no mark (the caller knows it is in place)
-- ARGV[5] -> how many of the tasks to lease as started, at ARGV[6]; 0 for none
-- ARGV[6] -> the started lease score: the lease expiry in whole Unix seconds plus the fetch's
--            token, k / 2^20 for some k in 1..2^19
-- ARGV[7] -> the event stream's cap, or "" (see events.lua)
-- Returns: a flat array of pairs, next to run first: the task ID, then its encoded TaskMessage, or
--          nil when the ID had no task hash or the hash no `msg`; such an ID cannot run, so it
--          is dropped (never made active) and its stub hash deleted (Go would leave it active
--          for good), and the caller reports it; then the string "taken" when ARGV[5] asked for
--          started tasks but ARGV[6] was held (every task is taken). Empty when the queue is
--          empty; the one string "paused" (never a pair) when it is paused.
local wanted = tonumber(ARGV[3])
local function mark_idle_if_short(taken)
    if taken < wanted and ARGV[4] ~= "" then
        redis.call("SET", KEYS[5], 1, "EX", ARGV[4])
    end
end
local found = redis.call("EXISTS", KEYS[2], KEYS[6])
if found > 0 and (found == 2 or redis.call("EXISTS", KEYS[2]) == 1) then
    mark_idle_if_short(0)
    return {"paused"}
end
-- The tasks taken, next to run first.
local next_first
if found == 0 then
    -- The list's tail is the next task; nil (false) when the list is empty.
    next_first = redis.call("RPOP", KEYS[1], wanted) or {}
else
    next_first = {}
    local function take_prioritized(min, max)
        local taken = redis.call("ZRANGE", KEYS[6], min, max, "BYSCORE", "LIMIT", 0, wanted - #next_first)
        if #taken > 0 then
            call_chunked("ZREM", KEYS[6], taken)
            for _, id in ipairs(taken) do
                next_first[#next_first + 1] = id
            end
        end
    end
    take_prioritized("-inf", "(" .. string.format("%.0f", PRIORITY_SPLIT))
    if #next_first < wanted then
        local listed = redis.call("LRANGE", KEYS[1], -(wanted - #next_first), -1)
        if #listed > 0 then
            redis.call("LTRIM", KEYS[1], 0, -#listed - 1)
            for i = #listed, 1, -1 do
                next_first[#next_first + 1] = listed[i]
            end
        end
    end
    if #next_first < wanted then
        take_prioritized("(" .. string.format("%.0f", PRIORITY_SPLIT), "+inf")
    end
end
if #next_first == 0 then
    mark_idle_if_short(0)
    return {}
end

-- The loop runs once per task: it keeps its own counts (Lua's # searches the table) and reads
-- KEYS, ARGV and redis.call (globals) through locals.
local call, prefix, taken_score, started_score = redis.call, ARGV[2], ARGV[1], ARGV[6]
local events, cap = KEYS[7], ARGV[7]
local to_start = tonumber(ARGV[5])
local token_held = to_start > 0 and call("ZCOUNT", KEYS[4], started_score, started_score) > 0
if token_held then
    to_start = 0
end
local taken, active, leases = {}, {}, {}
local n_active = 0
for i, id in ipairs(next_first) do
    local key = prefix .. id
    local msg = call("HGET", key, "msg")
    if msg then
        call("HSET", key, "state", "active")
        call("HDEL", key, "pending_since", "progress")
        n_active = n_active + 1
        active[n_active] = id
        leases[2 * n_active - 1] = n_active <= to_start and started_score or taken_score
        leases[2 * n_active] = id
        log_event(events, cap, "started", id, msg)
    else
        call("DEL", key)
    end
    taken[2 * i - 1] = id
    taken[2 * i] = msg
end
call_chunked("LPUSH", KEYS[3], active)
call_chunked("ZADD", KEYS[4], leases)
mark_idle_if_short(#next_first)
if token_held then
    taken[2 * #next_first + 1] = "taken"
end
return taken
