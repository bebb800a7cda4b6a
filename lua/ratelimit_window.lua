-- Shared by the rate limiter's scripts (Redisson's RRateLimiter layout), whose KEYS begin alike:
-- limiter, a hash of rate, interval (ms), type ('0' OVERALL, '1' PER_CLIENT) and keepAliveTime (ms);
-- value ({name}:value) and permits ({name}:permits), the OVERALL window; clientvalue
-- ({name}:value:<client id>) and clientpermits ({name}:permits:<client id>), this client's PER_CLIENT
-- window. A window is the permits left (a string) and the grants made within the last interval: a
-- sorted set of struct.pack('Bc0I', #id, id, permits) members (a one-byte length, a random id, the
-- permits as a 4-byte little-endian unsigned int) scored by the grant's time in ms.
--
-- settings() returns rate, interval, keepAliveTime and the window's value and permits keys, or nil
-- when the limiter is not set; err when the limiter's key is not a rate limiter (a hash of other
-- fields, a key of another type), found before anything is written.
local function settings()
  local limiter, value, clientvalue, permits, clientpermits = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  local f = redis.pcall('hmget', limiter, 'rate', 'interval', 'type', 'keepAliveTime')
  if f.err then
    return 'err'
  end
  if not f[1] and not f[2] and not f[3] and redis.call('exists', limiter) == 0 then
    return nil
  end
  local rate, interval = tonumber(f[1]), tonumber(f[2])
  if not rate or not interval or (f[3] ~= '0' and f[3] ~= '1') then
    return 'err'
  end
  if f[3] == '1' then
    return rate, interval, tonumber(f[4]) or 0, clientvalue, clientpermits
  end
  return rate, interval, tonumber(f[4]) or 0, value, permits
end

-- not_limiter(): the refusal of the limiter's key, which is no rate limiter (refuse.lua says what it
-- is).
local function not_limiter()
  local limiter = KEYS[1]
  --! INCLUDE refuse.lua
  return refuse(limiter)
end

-- now_ms: the server's clock, the only one the windows are kept by.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- permits_of(member): the permits of a grant, decoded as struct.unpack('Bc0I', member) does (in
-- plain Lua, so that servers without the struct library run it too).
local function permits_of(member)
  local at = string.byte(member, 1) + 2
  local b1, b2, b3, b4 = string.byte(member, at, at + 3)
  if not b4 then
    return nil
  end
  return b1 + b2 * 256 + b3 * 65536 + b4 * 16777216
end

local function sum_permits(members)
  local sum = 0
  for _, m in ipairs(members) do
    local p = permits_of(m)
    if not p then
      return nil
    end
    sum = sum + p
  end
  return sum
end

-- left(rate, interval, value, permits, now, write): the permits left in the window at now, nil when
-- the window has no value yet (all of rate is left), err when a key is not the limiter's. The grants
-- older than interval return their permits (never above rate: the value is then recounted from the
-- grants still in the window, Redisson's rule). write keeps the result, as an acquisition does.
local function left(rate, interval, value, permits, now, write)
  local v = redis.call('get', value)
  if not v then
    return nil
  end
  v = tonumber(v)
  if not v then
    return 'err'
  end
  local released = sum_permits(redis.call('zrangebyscore', permits, 0, now - interval))
  if not released then
    return 'err'
  end
  if released == 0 then
    return v
  end
  if v + released > rate then
    local used = sum_permits(redis.call('zrangebyscore', permits, '(' .. (now - interval), '+inf'))
    if not used then
      return 'err'
    end
    v = rate - used
  else
    v = v + released
  end
  if write then
    redis.call('zremrangebyscore', permits, 0, now - interval)
    redis.call('set', value, v)
  end
  return v
end

-- bad_window(value, permits): the refusal of the window's key that holds something else: value,
-- unless it holds a number or nothing, else permits.
local function bad_window(value, permits)
  --! INCLUDE refuse.lua
  local v = redis.pcall('get', value)
  if type(v) == 'table' or (v and not tonumber(v)) then
    return refuse(value)
  end
  return refuse(permits)
end

-- keep_alive(keep, value, permits): after an acquisition, Redisson's expiry rule: with a keep-alive
-- every key lives that long from now; without, the window takes the limiter's TTL, if it has one.
local function keep_alive(keep, value, permits)
  local limiter = KEYS[1]
  if keep > 0 then
    redis.call('pexpire', limiter, keep)
    redis.call('pexpire', value, keep)
    redis.call('pexpire', permits, keep)
    return
  end
  local ttl = redis.call('pttl', limiter)
  if ttl > 0 then
    redis.call('pexpire', value, ttl)
    redis.call('pexpire', permits, ttl)
  end
end
