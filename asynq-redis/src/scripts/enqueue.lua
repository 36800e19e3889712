-- enqueue: stores a new task as pending, scheduled or aggregating (Go asynq's enqueue,
-- enqueueUnique, schedule, scheduleUnique, addToGroup and addToGroupUnique in one script), and
-- wakes idle Rust servers when the task makes the queue's pending list non-empty.
--
-- A Rust server waits only after finding the list empty (or the queue paused): the scripts that
-- set the idle mark look at the list in the same step. So a task that joins tasks already
-- pending cannot be the first one a waiting server misses, and needs no wake-up; the waits it
-- would skip are those on a list a non-signalling writer (a Go producer or server) made
-- non-empty, which find both tasks at their next poll, and those on a paused queue, which the
-- unpause wakes. A default-priority task that makes the list non-empty publishes without
-- looking at the idle mark (one command where DEL and PUBLISH were two, on the path of every
-- woken pickup) and leaves the mark in place, saying so with the payload "kept" (pubsub.rs,
-- MARK_KEPT: the server that set the mark need not set it again): a server that waited marked
-- the queue, and the publish is what it waits for; the mark still gates the wake-ups of the
-- other scripts that make tasks pending, which delete it and publish "". Nobody waiting costs
-- one PUBLISH to an unheard channel, as the DEL of a missing mark cost before.
-- A task of a priority other than the default (ARGV[7]) goes to the prioritized set instead of
-- the list, after the tasks of its priority, and its hash records the priority, which it keeps
-- when scheduled (see priority.lua); being ours, it wakes idle servers whatever the set held.
-- A grouped task's group's entries in the group index are set from the group (see
-- group_index.lua).
--
-- KEYS[1] -> asynq:{<q>}:t:<id>               the task hash
-- KEYS[2] -> asynq:{<q>}:pending              when ARGV[3] is "pending" and ARGV[7] is ""
--            asynq:{<q>}:prioritized          when ARGV[3] is "pending" and ARGV[7] is not ""
--            asynq:{<q>}:scheduled            when ARGV[3] is "scheduled"
--            asynq:{<q>}:g:<group>            when ARGV[3] is "group"
-- KEYS[3] -> asynq:{<q>}:groups               its name also prefixes the group index's keys
-- KEYS[4] -> asynq:{<q>}:idle_workers         exists while a Rust server may wait for work (read
--                                              only for a task of another priority)
-- KEYS[5] -> asynq:{<q>}:priority_seq         (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:unique:<type>:<md5>  only for unique tasks
-- KEYS[last] -> asynq:{<q>}:events             the event stream (see events.lua)
-- ARGV[1] -> the encoded TaskMessage
-- ARGV[2] -> the task ID
-- ARGV[3] -> "pending", "scheduled" or "group"
-- ARGV[4] -> pending: now in Unix nanoseconds (pending_since);
--            scheduled: the process time in Unix seconds; group: now in Unix seconds
-- ARGV[5] -> the group name ("" unless ARGV[3] is "group")
-- ARGV[6] -> pending: the wake-up channel, asynq:{<q>}:ready; scheduled: the due-notice channel,
--            asynq:due, on which KEYS[2]'s name is published when the task is its earliest
--            (ours: a forwarder sleeping until a later due time wakes for it)
-- ARGV[7] -> the task's priority, -10 to 10 but not 0, or "" for the default ("pending" and
--            "scheduled" only)
-- ARGV[8] -> the uniqueness lock's TTL in whole seconds (only with KEYS[6])
-- ARGV[last] -> the event stream's cap, or "" (see events.lua)
-- Returns: 1 stored; 2 stored into a container that was empty (the pending list, the
--          prioritized or scheduled set, or a new group), so the queue may have been removed
--          since the caller registered it; 0 a task with this ID exists (nothing stored); -1 the uniqueness lock is
--          held by another task (nothing stored); -3 the lock's key holds another type than a
--          string, so it is no lock (nothing stored). As in Go, a lock taken just before an ID
--          conflict is kept until its TTL.
local lock = #KEYS == 7 and KEYS[6]
if lock then
    if not redis.call("SET", lock, ARGV[2], "NX", "EX", ARGV[8]) then
        if redis.call("TYPE", lock).ok ~= "string" then
            return -3
        end
        return -1
    end
end
if redis.call("EXISTS", KEYS[1]) == 1 then
    return 0
end
local placement, priority = ARGV[3], priority_of(ARGV[7])
local fresh = false
if placement == "pending" and priority then
    redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[4], "priority", ARGV[7])
    push_pending(nil, KEYS[2], KEYS[5], ARGV[2], priority, false)
    fresh = redis.call("ZCARD", KEYS[2]) == 1
    if redis.call("DEL", KEYS[4]) == 1 then
        redis.call("PUBLISH", ARGV[6], "")
    end
elseif placement == "pending" then
    redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[4])
    if redis.call("LPUSH", KEYS[2], ARGV[2]) == 1 then
        fresh = true
        redis.call("PUBLISH", ARGV[6], "kept")
    end
elseif placement == "scheduled" then
    redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "scheduled")
    if priority then
        redis.call("HSET", KEYS[1], "priority", ARGV[7])
    end
    redis.call("ZADD", KEYS[2], ARGV[4], ARGV[2])
    local first = redis.call("ZRANGE", KEYS[2], 0, 1)
    fresh = #first == 1
    if first[1] == ARGV[2] then
        redis.call("PUBLISH", ARGV[6], KEYS[2])
    end
else
    redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "aggregating", "group", ARGV[5])
    redis.call("ZADD", KEYS[2], ARGV[4], ARGV[2])
    fresh = redis.call("SADD", KEYS[3], ARGV[5]) == 1
    group_index_joined(KEYS[3], KEYS[2], ARGV[5], ARGV[4], 1)
end
-- Go records the lock on the hash for pending and scheduled tasks, not for grouped ones.
if lock and placement ~= "group" then
    redis.call("HSET", KEYS[1], "unique_key", lock)
end
log_event(KEYS[#KEYS], ARGV[#ARGV], "enqueued", ARGV[2], ARGV[1])
return fresh and 2 or 1
