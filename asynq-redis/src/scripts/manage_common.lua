-- manage_common: helpers prepended (after common.lua and message.lua) to the operator scripts
-- that run, archive or delete waiting tasks.
--
-- KEYS -> none of its own; the functions take the keys the including script was given.
-- ARGV -> none of its own.
-- Returns: nothing; defines local functions only.

-- The uniqueness-lock key of the task in hash `task_key` (asynq:{<q>}:t:<id>): its `unique_key`
-- field, or, for a grouped task (whose hash Go does not give the field), the message's
-- unique_key. Nil if none, or if it names anything but a lock of the task's queue
-- (<ns>:{<q>}:unique:...; a namespace holds no braces): a corrupt key elsewhere, on a Cluster in another slot, would fail
-- the script after its earlier writes.
local function unique_key_of(task_key)
    local key, msg = unpack(redis.call("HMGET", task_key, "unique_key", "msg"))
    if not key or key == "" then
        key = msg and message_field(msg, 10)
    end
    if not key or key == "" then
        return nil
    end
    local locks = string.match(task_key, "^([^{]*{[^}]*}:)") .. "unique:"
    if string.sub(key, 1, #locks) ~= locks then
        return nil
    end
    return key
end

-- Takes task `id` out of the container its waiting `state` names: for a pending task the
-- prioritized set (see priority.lua) or else the pending list, the zset of its `group`
-- (forgetting the group in `groups_key` once it is empty), or the zset named after the state.
-- Returns nil, or an error reply (nothing written) when that container does not hold the task
-- or the state is not a waiting one.
local function detach_waiting(id, state, group, queue_prefix, group_prefix, groups_key)
    if state == "pending" then
        if redis.call("ZREM", queue_prefix .. "prioritized", id) == 0
            and redis.call("LREM", queue_prefix .. "pending", "0", id) == 0 then
            return redis.error_reply("task id not found in list " .. queue_prefix .. "pending")
        end
    elseif state == "aggregating" then
        if redis.call("ZREM", group_prefix .. group, id) == 0 then
            return redis.error_reply("task id not found in zset " .. group_prefix .. group)
        end
        if redis.call("ZCARD", group_prefix .. group) == 0 then
            redis.call("SREM", groups_key, group)
        end
    elseif state == "scheduled" or state == "retry" or state == "archived" or state == "completed" then
        if redis.call("ZREM", queue_prefix .. state, id) == 0 then
            return redis.error_reply("task id not found in zset " .. queue_prefix .. state)
        end
    else
        return redis.error_reply("task has an unknown state: " .. tostring(state))
    end
    return nil
end

-- Deletes the hash of task `id`, releasing the uniqueness lock the task holds and telling a
-- waiting Rust client on `channel` (asynq:{<q>}:finished). The caller removes the ID from its
-- container.
local function delete_task_hash(task_key, id, channel)
    release_lock(unique_key_of(task_key), id)
    notify_waiters(task_key, channel, id)
    return redis.call("DEL", task_key)
end

-- Deletes the archived tasks scored at or before `cutoff` (Unix seconds), then the oldest ones
-- beyond the newest `max_size` - 1, hashes included (as the core archive script trims).
-- Returns how many it deleted past the age limit, and how many over the size limit.
local function trim_archive(archived, cutoff, max_size, task_prefix)
    local function delete_all(ids)
        for _, id in ipairs(ids) do
            redis.call("DEL", task_prefix .. id)
            redis.call("ZREM", archived, id)
        end
        return #ids
    end
    local by_age = delete_all(redis.call("ZRANGE", archived, "-inf", cutoff, "BYSCORE"))
    local by_size = delete_all(redis.call("ZRANGE", archived, 0, -tonumber(max_size)))
    return by_age, by_size
end
