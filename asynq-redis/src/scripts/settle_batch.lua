-- settle_batch: every outcome but `done` for many tasks of one queue at once: retries
-- (retry.lua), archives (archive.lua), successes with retention (complete.lua), requeues and
-- forgiven stalls (requeue.lua). Each task gets exactly what its own script gives it: the
-- re-encoded message and state in its hash, its place in the retry, archived or completed set
-- or next in line among the pending tasks of its priority (see priority.lua), the counters it moves, its uniqueness lock released only
-- when it completes, a waiting Rust client's notification when it is archived or completed,
-- its `stalls` counted when it stalled.
--
-- The lease set is read and written by one ZMSCORE and one ZREM for the whole batch, each
-- counter moved once by the number of tasks that move it, the archive trimmed once after the
-- batch's archives, and idle servers woken once after its requeues; only the active list needs
-- an LREM per task. The tasks' `waiters` marks are looked at only while the queue's `waiting`
-- mark says a client waits. One difference from archive.lua, which trims before it writes its
-- task's hash: a task the trim drops at once (an archive of 10 000 tasks archived this second,
-- its ID the smallest) leaves no hash here, where archive.lua leaves one no container lists.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:pending
-- KEYS[4] -> asynq:{<q>}:retry
-- KEYS[5] -> asynq:{<q>}:archived
-- KEYS[6] -> asynq:{<q>}:completed
-- KEYS[7] -> asynq:{<q>}:processed:<YYYY-MM-DD>
-- KEYS[8] -> asynq:{<q>}:failed:<YYYY-MM-DD>
-- KEYS[9] -> asynq:{<q>}:processed
-- KEYS[10] -> asynq:{<q>}:failed
-- KEYS[11] -> asynq:{<q>}:idle_workers
-- KEYS[12] -> asynq:{<q>}:waiting (ours; see mark_waiter.lua)
-- KEYS[13] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[14] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- KEYS[15] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> now, Unix seconds (an archived task's score)
-- ARGV[2] -> the archive's age cutoff: archived tasks scored at or before it are deleted, Unix
--            seconds
-- ARGV[3] -> the archive's size limit (10000: at most 9 999 remain after a trim)
-- ARGV[4] -> the daily counters' expiry, Unix seconds
-- ARGV[5] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[6] -> the finish channel, asynq:{<q>}:finished (ours; see notify_waiters in common.lua)
-- ARGV[7] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[8] -> the lease cutoff, Unix seconds (a recoverer's: a task is settled only while its
--            lease score is at or below it, so that a task recovered by another server and
--            leased again since it was listed is left alone), or "" to settle under any lease
-- ARGV[9..] -> one record of 5 values per task, in order:
--              kind: "retry" (counted as processed and failed), "retry_uncounted" (counted
--                    nowhere), "archive", "complete", "requeue" or "stall";
--              the task ID;
--              the encoded TaskMessage to store: with the error recorded (retry, archive), with
--                    completed_at set (complete), "" (requeue, stall: the message is kept);
--              the score, Unix seconds: the retry time (retry), completion + retention
--                    (complete), "" otherwise;
--              the uniqueness lock asynq:{<q>}:unique:<type>:<md5> to release (complete), or
--                    ""; a lock key of another type than string is left alone, failing nothing
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: one reply per task, in order: 1 done; 0 the task is not active, or its lease is past
--          the cutoff (nothing written; also for a second copy of an ID in the same batch); an error, with nothing written, for a
--          partial record or an unknown kind
local FIELDS = 5
local KINDS = { retry = true, retry_uncounted = true, archive = true, complete = true, requeue = true, stall = true }
if (#ARGV - 9) % FIELDS ~= 0 then
    return redis.error_reply("settle_batch: ARGV holds a partial record")
end
local ids = {}
local events, cap = KEYS[15], ARGV[#ARGV]
for i = 9, #ARGV - 1, FIELDS do
    -- Checked before anything is written, so that a bad record fails the call whole.
    if not KINDS[ARGV[i]] then
        return redis.error_reply("settle_batch: unknown kind " .. tostring(ARGV[i]))
    end
    ids[#ids + 1] = ARGV[i + 1]
end
local replies, settled, seen = {}, {}, {}
local failed, processed, archived, requeued = 0, 0, false, false
local waited_for = redis.call("EXISTS", KEYS[12]) == 1
local cutoff = tonumber(ARGV[8])
for first = 1, #ids, CHUNK do
    local last = math.min(first + CHUNK - 1, #ids)
    local scores = redis.call("ZMSCORE", KEYS[2], unpack(ids, first, last))
    for j = first, last do
        local id = ids[j]
        -- A task is active while it holds a lease.
        local score = scores[j - first + 1]
        if score and (not cutoff or tonumber(score) <= cutoff) and not seen[id] then
            seen[id] = true
            local at = 9 + (j - 1) * FIELDS
            local kind, msg, score, lock = ARGV[at], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
            local key = ARGV[5] .. id
            redis.call("LREM", KEYS[1], "-1", id)
            if kind == "retry" or kind == "retry_uncounted" then
                redis.call("ZADD", KEYS[4], score, id)
                redis.call("HSET", key, "msg", msg, "state", "retry")
                if kind == "retry" then
                    failed = failed + 1
                end
                log_failure(events, cap, "retried", id, msg)
            elseif kind == "archive" then
                redis.call("ZADD", KEYS[5], ARGV[1], id)
                redis.call("HSET", key, "msg", msg, "state", "archived")
                failed = failed + 1
                archived = true
                log_failure(events, cap, "archived", id, msg)
                if waited_for then
                    notify_waiters(key, ARGV[6], id)
                end
            elseif kind == "complete" then
                redis.call("ZADD", KEYS[6], score, id)
                redis.call("HSET", key, "msg", msg, "state", "completed")
                processed = processed + 1
                log_event(events, cap, "succeeded", id, msg)
                if lock ~= "" then
                    release_lock(lock, id)
                end
                if waited_for then
                    notify_waiters(key, ARGV[6], id)
                end
            else -- requeue or stall
                push_pending(KEYS[3], KEYS[13], KEYS[14], id, priority_of(redis.call("HGET", key, "priority")), true)
                redis.call("HSET", key, "state", "pending")
                if kind == "stall" then
                    redis.call("HINCRBY", key, "stalls", 1)
                end
                if cap ~= "" then
                    log_event(events, cap, "requeued", id, redis.call("HGET", key, "msg"))
                end
                requeued = true
            end
            settled[#settled + 1] = id
            replies[j] = 1
        else
            replies[j] = 0
        end
    end
end
if #settled > 0 then
    call_chunked("ZREM", KEYS[2], settled)
end
if archived then
    local function delete_all(trimmed)
        for _, id in ipairs(trimmed) do
            redis.call("DEL", ARGV[5] .. id)
            redis.call("ZREM", KEYS[5], id)
        end
    end
    delete_all(redis.call("ZRANGE", KEYS[5], "-inf", ARGV[2], "BYSCORE"))
    delete_all(redis.call("ZRANGE", KEYS[5], 0, -tonumber(ARGV[3])))
end
processed = processed + failed
if processed > 0 then
    incr_daily_by(KEYS[7], processed, ARGV[4])
end
if failed > 0 then
    incr_daily_by(KEYS[8], failed, ARGV[4])
end
if processed > 0 then
    incr_total_by(KEYS[9], processed)
end
if failed > 0 then
    incr_total_by(KEYS[10], failed)
end
if requeued and redis.call("DEL", KEYS[11]) == 1 then
    redis.call("PUBLISH", ARGV[7], "")
end
return replies
