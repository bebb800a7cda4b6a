-- foreign_window(): the refusal (refuse.lua) of a rate limiter's window key that holds another type
-- (value and clientvalue keep a number, permits and clientpermits a sorted set: ratelimit_window.lua),
-- or nil: the scripts that delete or expire the windows whole (Delete, Expire, SetRate) ask first,
-- and leave someone else's key alone.
local function foreign_window()
  local value, clientvalue, permits, clientpermits = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  for _, w in ipairs({{value, 'string'}, {clientvalue, 'string'}, {permits, 'zset'}, {clientpermits, 'zset'}}) do
    local key, want = w[1], w[2]
    local t = redis.call('type', key)
    t = type(t) == 'table' and t.ok or t
    if t ~= 'none' and (t ~= want or (want == 'string' and not tonumber(redis.call('get', key)))) then
      --! INCLUDE refuse.lua
      return refuse(key)
    end
  end
  return nil
end

-- whole_limiter(): for the scripts that act on the limiter whole (Delete, Expire): its rate
-- (settings(): nil when it is not set), or nil and the refusal of a key that is not the limiter's:
-- the limiter's own, or a window key that holds another type.
local function whole_limiter()
  local rate = settings()
  if rate == 'err' then
    return nil, not_limiter()
  end
  return rate, foreign_window()
end
