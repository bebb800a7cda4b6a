-- Shared by the group lock's scripts (multilock.Group), which keep Redisson's layout
-- (RedissonFasterMultiLock): one hash per group, KEYS[1], and for each value locked three fields,
--   <value>                          its owner, '<client id>:<owner id>'
--   <value>:<owner>:expire_time      until when that owner holds it: an absolute time in ms
--   <value>:<owner>:lock_count       how many times that owner holds it
-- where <value> is the value's field name (multilock.GroupField). A value is held while its owner's
-- expire_time is ahead of the clock; its fields stay until its owner releases it or another owner
-- takes it over. The hash's TTL is the longest lease given, so that an abandoned group goes.
--
-- Redisson reads expire_time against the Java client's clock; these scripts against the server's
-- (TIME), so that Go clients never depend on their hosts' clocks.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function expire_field(value, owner)
  return value .. ':' .. owner .. ':expire_time'
end

local function count_field(value, owner)
  return value .. ':' .. owner .. ':lock_count'
end

-- foreign(group): the refusal (refuse.lua) of a group that holds no group lock: a key of another
-- type, or a hash whose fields are none of a group lock's (a lock's hash, a read-write lock's, an
-- application's); nil when group is a group lock's hash, or does not exist. It reads one field,
-- at random where the server can (HRANDFIELD, Redis 6.2), the first of HSCAN's page otherwise: a
-- group lock's hash holds nothing but its fields, and any other hash none of them.
local function foreign(group)
  local e = redis.pcall('hrandfield', group, 1, 'withvalues')
  if e.err and not string.find(e.err, '^WRONGTYPE') then
    e = redis.pcall('hscan', group, 0, 'count', 2)
    e = e.err and e or e[2]
  end
  if not e.err then
    local f, v = e[1], e[2]
    if not f or ((string.find(f, ':expire_time$') or string.find(f, ':lock_count$')) and string.find(v, '^%d+$'))
        or (string.find(f, '^[%w+/]+$') and string.find(v, ':%d+$')) then
      return nil
    end
  end
  --! INCLUDE refuse.lua
  return refuse(group)
end

-- live_count(group, value, owner, now): owner's hold count of value when it holds it at now, else nil
-- (also when group is no hash: foreign tells).
local function live_count(group, value, owner, now)
  if redis.pcall('hget', group, value) ~= owner then
    return nil
  end
  local f = redis.call('hmget', group, expire_field(value, owner), count_field(value, owner))
  local e = tonumber(f[1])
  if not e or e < now then
    return nil
  end
  return tonumber(f[2]) or 0
end

-- forget(group, value, owner): removes what owner keeps of value that it no longer holds (its lease
-- ended, or another owner took the value over): the value itself only while owner still names it.
local function forget(group, value, owner)
  if redis.call('hget', group, value) == owner then
    redis.call('hdel', group, value)
  end
  redis.call('hdel', group, expire_field(value, owner), count_field(value, owner))
end

-- lengthen(group, ms, before): the hash lives ms at least, before being its PTTL when the script
-- began (-2: it did not exist). A hash that had no TTL (-1), which only a foreign writer makes, is
-- left without, as Redisson leaves it.
local function lengthen(group, ms, before)
  if before ~= -1 and redis.call('pttl', group) < ms then
    redis.call('pexpire', group, ms)
  end
end
