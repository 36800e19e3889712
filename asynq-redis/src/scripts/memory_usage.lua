-- memory_usage: an estimate of the memory one queue takes, by Go asynq v0.26's sampling
-- (memoryUsage): per container, the average MEMORY USAGE of its first ARGV[2] task hashes
-- times its size, plus the container itself; for groups, the average over the first ARGV[2]
-- tasks of each of the first ARGV[3] groups (as SSCAN finds them; Go takes them from SMEMBERS)
-- times the number of aggregating tasks (group_counts in group_index.lua: in constant time past
-- a hundred groups). With the
-- guards Go added after v0.26: a missing hash is left out of the sample, and an empty sample
-- adds nothing (no division by zero).
--
-- KEYS[1] -> asynq:{<q>}:active
-- KEYS[2] -> asynq:{<q>}:pending
-- KEYS[3] -> asynq:{<q>}:scheduled
-- KEYS[4] -> asynq:{<q>}:retry
-- KEYS[5] -> asynq:{<q>}:archived
-- KEYS[6] -> asynq:{<q>}:completed
-- KEYS[7] -> asynq:{<q>}:groups (its name also prefixes the group index's keys)
-- KEYS[8] -> asynq:{<q>}:prioritized (ours; see priority.lua), sampled as the others
-- ARGV[1] -> the task key prefix, asynq:{<q>}:t:
-- ARGV[2] -> how many tasks to sample per container (Go: 20)
-- ARGV[3] -> how many groups to sample (Go: 5)
-- ARGV[4] -> the group key prefix, asynq:{<q>}:g:
-- Returns: the estimate in bytes (an integer); -1 when the server refuses MEMORY USAGE (a
--          managed service may disable it)
local sample_size = tonumber(ARGV[2])
if sample_size <= 0 then
    return redis.error_reply("sample size must be a positive number")
end
local unavailable = false
-- MEMORY USAGE of `key`, or nil when the key does not exist or the command is refused.
local function usage(key)
    if unavailable then
        return nil
    end
    local reply = redis.pcall("MEMORY", "USAGE", key)
    if type(reply) == "table" and reply.err then
        unavailable = true
        return nil
    end
    return reply or nil
end
-- Adds to `sample` the usage of the task hashes of `ids`.
local function add_sample(sample, ids)
    for _, id in ipairs(ids) do
        local bytes = usage(ARGV[1] .. id)
        if bytes then
            sample.total = sample.total + bytes
            sample.count = sample.count + 1
        end
    end
end
local function estimate(sample, size)
    if sample.count == 0 then
        return 0
    end
    return sample.total / sample.count * size
end
local total = 0
local containers = {
    {KEYS[1], "LRANGE", "LLEN"},
    {KEYS[2], "LRANGE", "LLEN"},
    {KEYS[3], "ZRANGE", "ZCARD"},
    {KEYS[4], "ZRANGE", "ZCARD"},
    {KEYS[5], "ZRANGE", "ZCARD"},
    {KEYS[6], "ZRANGE", "ZCARD"},
    {KEYS[8], "ZRANGE", "ZCARD"},
}
for _, container in ipairs(containers) do
    local key, range, size = unpack(container)
    local sample = {total = 0, count = 0}
    add_sample(sample, redis.call(range, key, 0, sample_size - 1))
    total = total + estimate(sample, redis.call(size, key))
    total = total + (usage(key) or 0)
end
local _, aggregating = group_counts(KEYS[7], ARGV[4])
if aggregating < 0 then
    -- An estimate: the index's count, stale as it may be.
    aggregating = -1 - aggregating
end
local group_sample = {total = 0, count = 0}
local sampled = redis.call("SSCAN", KEYS[7], 0, "COUNT", ARGV[3])[2]
for i = 1, math.min(#sampled, tonumber(ARGV[3])) do
    add_sample(group_sample, redis.call("ZRANGE", ARGV[4] .. sampled[i], 0, sample_size - 1))
end
total = total + estimate(group_sample, aggregating)
if unavailable then
    return -1
end
return math.floor(total)
