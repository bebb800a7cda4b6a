-- next_token(counter): the next fencing token of a lock, INCR of its counter (Redisson's
-- redisson_lock_token:{name}, which Java's fenced locks INCR too). A counter that is missing (never
-- used, or lost with a restart without persistence) starts from the server's clock in microseconds,
-- so that the first token after such a loss is above every token handed out before it: a counter
-- goes up by one per acquisition, far more slowly than a clock in microseconds. The token comes as
-- a string of its digits: Lua would write a number that large with an exponent. A counter that holds
-- other data gives nil and the error of the INCR, for refuse.lua, before anything is written.
local function next_token(counter)
  local n = redis.pcall('incr', counter)
  if type(n) == 'table' then
    return nil, n.err
  end
  if n == 1 then
    local t = redis.call('time')
    n = t[1] * 1000000 + t[2]
    redis.call('set', counter, string.format('%.0f', n))
  end
  return string.format('%.0f', n)
end

-- take_token(counter, fenced): the fencing token a lock that hands them out (fenced '1') gives
-- (next_token), 0 for one that does not, or nil and the refusal (refuse.lua) of a counter that holds
-- other data.
local function take_token(counter, fenced)
  if fenced ~= '1' then
    return 0
  end
  local n, err = next_token(counter)
  if err then
    --! INCLUDE refuse.lua
    return nil, refuse(counter, nil, err)
  end
  return n
end
