-- done_batch: `done` for many tasks of one queue at once: deletes each task that succeeded
-- without retention (or was revoked), releases the uniqueness locks they hold, and counts them
-- as processed. Each task gets exactly what `done` gives it, a waiting Rust client's
-- notification included.
--
-- The lease set is read and written by one ZMSCORE and one ZREM, and the task hashes deleted
-- by one DEL, for the whole batch; only the active list needs an LREM per task. The tasks'
-- `waiters` marks are looked at only while the queue's `waiting` mark says a client waits.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[4] -> asynq:{<q>}:processed
-- KEYS[5] -> asynq:{<q>}:waiting (ours; see mark_waiter.lua)
-- KEYS[6] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the daily counter's expiry, Unix seconds
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[4] -> the lease cutoff, Unix seconds (a task is settled only while its lease score is at
--            or below it, so that a write retried late leaves alone a task leased again since),
--            or "" to settle under any lease
-- ARGV[5..] -> pairs of (task ID, its uniqueness lock asynq:{<q>}:unique:<type>:<md5> or ""); a
--              lock key of another type than string is left alone, failing nothing; with an
--              event log (ARGV[last] not ""), triples, the task's type name third
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: one reply per task, in order: 1 done; 0 the task is not active, or its lease is past
--          the cutoff (nothing written; also for a second copy of an ID in the same batch)
local cap = ARGV[#ARGV]
local step = cap == "" and 2 or 3
local cutoff = tonumber(ARGV[4])
-- The loops run once per task: they keep their own counts (Lua's # searches the table) and read
-- KEYS, ARGV and redis.call (globals) through locals.
local argv, call, active, events, prefix = ARGV, redis.call, KEYS[1], KEYS[6], ARGV[2]
local ids, n_ids = {}, 0
for i = 5, #argv - 1, step do
    n_ids = n_ids + 1
    ids[n_ids] = argv[i]
end
local replies, finished, task_keys, seen, n_finished = {}, {}, {}, {}, 0
local waited_for = call("EXISTS", KEYS[5]) == 1
for first = 1, n_ids, CHUNK do
    local last = math.min(first + CHUNK - 1, n_ids)
    local scores = call("ZMSCORE", KEYS[2], unpack(ids, first, last))
    for j = first, last do
        local id = ids[j]
        -- A task is active while it holds a lease.
        local score = scores[j - first + 1]
        if score and (not cutoff or tonumber(score) <= cutoff) and not seen[id] then
            seen[id] = true
            local key = prefix .. id
            call("LREM", active, "-1", id)
            if waited_for then
                notify_waiters(key, ARGV[3], id)
            end
            local at = 5 + step * (j - 1)
            if cap ~= "" then
                call("XADD", events, "MAXLEN", cap, "*", "kind", "succeeded", "task", id, "type", argv[at + 2])
            end
            local lock = argv[at + 1]
            if lock ~= "" then
                release_lock(lock, id)
            end
            n_finished = n_finished + 1
            finished[n_finished] = id
            task_keys[n_finished] = key
            replies[j] = 1
        else
            replies[j] = 0
        end
    end
end
if n_finished > 0 then
    call_chunked("ZREM", KEYS[2], finished)
    call_chunked("DEL", nil, task_keys)
    incr_daily_by(KEYS[3], n_finished, ARGV[1])
    incr_total_by(KEYS[4], n_finished)
end
return replies
