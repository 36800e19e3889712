-- give_back_fetch: gives back, uncharged, the tasks a fetch whose reply was lost leased as started
-- (dequeue.lua's started score: the lease's whole second plus the fetch's token, which no other
-- lease of the queue held). No handler of theirs runs, as the worker never learned their IDs:
-- left alone, their expired leases would count as stalls. Each goes back as requeue.lua gives a
-- task back (give_back.lua), in the order the fetch took them, and idle Rust servers are woken.
-- A lease extended or settled since holds another score, so a second call, or one made when the
-- fetch never ran, gives back nothing.
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:lease
-- KEYS[3] -> asynq:{<q>}:pending
-- KEYS[4] -> asynq:{<q>}:idle_workers
-- KEYS[5] -> asynq:{<q>}:prioritized (ours; see priority.lua)
-- KEYS[6] -> asynq:{<q>}:priority_seq (ours; see priority.lua)
-- KEYS[7] -> asynq:{<q>}:events, the event stream (see events.lua)
-- ARGV[1] -> the fetch's started lease score (dequeue.lua's ARGV[6])
-- ARGV[2] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[3] -> the wake-up channel, asynq:{<q>}:ready
-- ARGV[4] -> the event stream's cap, or "" (see events.lua)
-- Returns: how many tasks were given back.
-- Each goes back to the front of the line, so the last the fetch took goes first: the nearest
-- the active list's head (dequeue.lua pushes them there in the order it takes them).
local found = {}
for _, id in ipairs(redis.call("ZRANGE", KEYS[2], ARGV[1], ARGV[1], "BYSCORE")) do
    found[#found + 1] = {redis.call("LPOS", KEYS[1], id) or -1, id}
end
table.sort(found, function(a, b) return a[1] < b[1] end)
local given = 0
for _, entry in ipairs(found) do
    local id = entry[2]
    if give_back(KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], ARGV[2] .. id, id, false, KEYS[7], ARGV[4]) then
        given = given + 1
    end
end
if given > 0 and redis.call("DEL", KEYS[4]) == 1 then
    redis.call("PUBLISH", ARGV[3], "")
end
return given
