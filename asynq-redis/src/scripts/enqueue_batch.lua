-- enqueue_batch: `enqueue` for many tasks of one queue at once, whatever their placement
-- (pending, scheduled or in a group) and whether unique or not: each task, in order, gets
-- exactly what `enqueue` gives it and the same reply, and idle Rust servers are woken once.
--
-- Most batches are of plain tasks (pending, not unique), so a task is a pair (ID, message) and
-- only the others add a placement record; a call without records runs a loop of its own that
-- looks for none. One variadic EXISTS per chunk of tasks tells whether any ID is taken; only
-- then is each looked at alone (an ID no task had before the call is taken only by a task
-- stored earlier in the batch, which the script remembers). A unique task takes its lock before
-- its ID is looked at, as in `enqueue`. The pending IDs go onto the pending list, and the
-- scheduled ones into the scheduled set, by one LPUSH and one ZADD per chunk after the loop: no
-- other placement touches those keys, so the end state is that of the tasks enqueued one by
-- one. Idle servers are woken when any task was stored as pending. A task of a priority other
-- than the default has a record, and goes to the prioritized set in its turn (see
-- priority.lua), so tasks of one priority keep their request order. The group index's entries
-- of each group a task joined are set from the group once, after the loop (see group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:pending
-- KEYS[2] -> asynq:{<q>}:scheduled
-- KEYS[3] -> asynq:{<q>}:groups               its name also prefixes the group index's keys
-- KEYS[4] -> asynq:{<q>}:idle_workers         exists while a Rust server waits for work
-- KEYS[5] -> asynq:{<q>}:prioritized          (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:priority_seq         (ours; see priority.lua)
-- KEYS[7] -> asynq:{<q>}:events               the event stream (see events.lua)
-- ARGV[1] -> now, Unix nanoseconds (a pending task's pending_since)
-- ARGV[2] -> now, Unix seconds (a grouped task's score)
-- ARGV[3] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[4] -> the group key prefix, asynq:{<q>}:g:
-- ARGV[5] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[6] -> the due-notice channel, asynq:due, on which KEYS[2]'s name is published when a
--            task of this call became the earliest scheduled (ours; see enqueue.lua)
-- ARGV[7] -> n, the number of tasks
-- ARGV[8 .. 7+2n] -> n pairs of (task ID, encoded TaskMessage), in request order
-- ARGV[8+2n ..] -> one record of 7 per task that is not plain pending (pending, not unique, of
--                  the default priority), in any order:
--                  (the task's number 1..n,
--                   "pending", "scheduled" or "group",
--                   scheduled: the process time in Unix seconds, else "",
--                   group: the group name, else "",
--                   unique: its lock asynq:{<q>}:unique:<type>:<md5>, else "",
--                   unique: the lock's TTL in whole seconds, else "",
--                   the priority, -10 to 10 but not 0, or "" for the default (pending and
--                   scheduled only))
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: one reply per task, in order, as `enqueue` replies: 1 stored (2 for the first task
--          stored when one went into the pending list, the scheduled set or a group that was
--          empty, as enqueue.lua's 2); 0 a task with this ID
--          exists, or came earlier in the batch (nothing stored); -1 the uniqueness lock is held
--          by another task (nothing stored); -3 the lock's key holds another type than a
--          string, so it is no lock (nothing stored). As in Go, a lock taken just before an ID
--          conflict is kept until its TTL.
local n_tasks = tonumber(ARGV[7])
local records = {}
local RECORD = 7
for r = 8 + 2 * n_tasks, #ARGV - 1, RECORD do
    records[tonumber(ARGV[r])] = r
end
-- The loops run once per task: they keep their own counts (Lua's # searches the table) and read
-- ARGV and redis.call (globals) through locals.
local argv, call = ARGV, redis.call
local task_keys, task_prefix = {}, ARGV[3]
for n = 1, n_tasks do
    task_keys[n] = task_prefix .. argv[6 + 2 * n]
end
local some_exist = false
for first = 1, #task_keys, CHUNK do
    if redis.call("EXISTS", unpack(task_keys, first, math.min(first + CHUNK - 1, #task_keys))) > 0 then
        some_exist = true
        break
    end
end
-- Whether a task goes into a container that was empty (see the reply 2 below): the pending
-- list, the scheduled set or a new group.
local had_pending, fresh = redis.call("EXISTS", KEYS[1]) == 1, false
local replies, pending, scheduled, seen, prioritized = {}, {}, {}, {}, false
-- How many tasks joined each group (by name), and the groups in the order they were first joined.
local joined, joined_order = {}, {}
if next(records) == nil then
    -- Plain tasks only: the loop they had before placement records, without a lookup per task.
    local pending_since, n_pending = ARGV[1], 0
    for n, key in ipairs(task_keys) do
        local id = argv[6 + 2 * n]
        if seen[id] or (some_exist and call("EXISTS", key) == 1) then
            replies[n] = 0
        else
            seen[id] = true
            call("HSET", key, "msg", argv[7 + 2 * n], "state", "pending", "pending_since", pending_since)
            n_pending = n_pending + 1
            pending[n_pending] = id
            replies[n] = 1
        end
    end
else
    for n, key in ipairs(task_keys) do
        local id, r = ARGV[6 + 2 * n], records[n]
        local lock = r and ARGV[r + 4] ~= "" and ARGV[r + 4]
        if lock and not redis.call("SET", lock, id, "NX", "EX", ARGV[r + 5]) then
            replies[n] = redis.call("TYPE", lock).ok ~= "string" and -3 or -1
        elseif seen[id] or (some_exist and redis.call("EXISTS", key) == 1) then
            replies[n] = 0
        else
            seen[id] = true
            local msg, placement = ARGV[7 + 2 * n], r and ARGV[r + 1] or "pending"
            local priority = r and priority_of(ARGV[r + 6])
            -- Go records the lock on the hash for pending and scheduled tasks, not for grouped ones.
            if placement == "pending" and priority then
                redis.call("HSET", key, "msg", msg, "state", "pending", "pending_since", ARGV[1], "priority", ARGV[r + 6])
                if lock then
                    redis.call("HSET", key, "unique_key", lock)
                end
                push_pending(nil, KEYS[5], KEYS[6], id, priority, false)
                prioritized = true
            elseif placement == "pending" then
                if lock then
                    redis.call("HSET", key, "msg", msg, "state", "pending", "pending_since", ARGV[1], "unique_key", lock)
                else
                    redis.call("HSET", key, "msg", msg, "state", "pending", "pending_since", ARGV[1])
                end
                pending[#pending + 1] = id
            elseif placement == "scheduled" then
                if lock then
                    redis.call("HSET", key, "msg", msg, "state", "scheduled", "unique_key", lock)
                else
                    redis.call("HSET", key, "msg", msg, "state", "scheduled")
                end
                if priority then
                    redis.call("HSET", key, "priority", ARGV[r + 6])
                end
                scheduled[#scheduled + 1] = ARGV[r + 2]
                scheduled[#scheduled + 1] = id
            else
                local group = ARGV[r + 3]
                redis.call("HSET", key, "msg", msg, "state", "aggregating", "group", group)
                redis.call("ZADD", ARGV[4] .. group, ARGV[2], id)
                if redis.call("SADD", KEYS[3], group) == 1 then
                    fresh = true
                end
                if not joined[group] then
                    joined[group] = 0
                    joined_order[#joined_order + 1] = group
                end
                joined[group] = joined[group] + 1
            end
            replies[n] = 1
        end
    end
end
for _, group in ipairs(joined_order) do
    group_index_joined(KEYS[3], ARGV[4] .. group, group, ARGV[2], joined[group])
end
call_chunked("LPUSH", KEYS[1], pending)
fresh = fresh or (#pending > 0 and not had_pending)
local earliest = #scheduled > 0 and redis.call("ZRANGE", KEYS[2], 0, 0, "WITHSCORES")[2]
call_chunked("ZADD", KEYS[2], scheduled)
if #scheduled > 0 then
    local sooner = not earliest
    for i = 1, #scheduled, 2 do
        sooner = sooner or tonumber(scheduled[i]) < tonumber(earliest)
    end
    if sooner then
        redis.call("PUBLISH", ARGV[6], KEYS[2])
    end
    fresh = fresh or not earliest
end
if (#pending > 0 or prioritized) and redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[5], "")
end
if ARGV[#ARGV] ~= "" then
    for n = 1, n_tasks do
        if replies[n] == 1 then
            log_event(KEYS[7], ARGV[#ARGV], "enqueued", ARGV[6 + 2 * n], ARGV[7 + 2 * n])
        end
    end
end
-- A batch with a task stored into an empty container says so in its first stored task's reply.
if fresh then
    for n = 1, n_tasks do
        if replies[n] == 1 then
            replies[n] = 2
            break
        end
    end
end
return replies
