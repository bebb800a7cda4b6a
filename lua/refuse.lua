-- Refusing a name that holds data that is not the primitive's: an application's string, hash or
-- list, or another primitive's layout. The scripts include this file where they refuse, so that the
-- common path defines nothing (lua.Load's INCLUDE).
--
-- kind_of(key) names what key holds: its type as TYPE names it ('string', 'hash', 'list', 'set',
-- 'zset', 'stream', 'none'), 'count' for a string that is a whole number (a semaphore's or latch's
-- count, or an application's counter), and for a hash whose fields tell whose it is: 'rwlock' (a
-- read-write lock: 'mode'), 'limiter' (a rate limiter: 'rate'), 'lock' (Redisson's lock hash: one
-- field '<id>:<n>' = a count) or 'group' (a group lock: '<value>:<owner>:expire_time' fields).
--
-- refuse(key, what, err) is the error reply of a call refused because key holds what (nil:
-- kind_of(key); 'text': a string that is not a number, where the primitive keeps a count there).
-- Redis returns a script's error reply as it is: 'WRONGTYPE redisync:<what> <key>', which
-- core/refusal.go reads as redisync.ErrWrongType. Whoever returns it has written nothing before.
-- err is the message of the error a redis.pcall answered, when one led here: an error that says
-- nothing of a type (out of memory, no permission) is Redis's own answer, and returned as it is.
local function kind_of(key)
  local t = redis.call('type', key)
  t = type(t) == 'table' and t.ok or t
  if t == 'string' then
    if string.find(redis.call('get', key), '^%-?%d+$') then
      return 'count'
    end
  elseif t == 'hash' then
    local f = redis.call('hmget', key, 'mode', 'rate')
    if f[1] == 'read' or f[1] == 'write' then
      return 'rwlock'
    elseif f[2] then
      return 'limiter'
    end
    local e = redis.call('hscan', key, 0, 'count', 8)[2]
    if #e == 2 and string.find(e[1], ':%d+$') and string.find(e[2], '^%d+$') then
      return 'lock'
    end
    for i = 1, #e, 2 do
      if string.find(e[i], ':expire_time$') or string.find(e[i], ':lock_count$') then
        return 'group'
      end
    end
  end
  return t
end

local function refuse(key, what, err)
  if err and not string.find(err, '^WRONGTYPE') and not string.find(err, 'not an integer') then
    return redis.error_reply(err)
  end
  return redis.error_reply('WRONGTYPE redisync:' .. (what or kind_of(key)) .. ' ' .. key)
end
