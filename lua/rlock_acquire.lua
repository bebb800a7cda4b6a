-- Acquire a reentrant lock (Redisson's layout: a hash, field = owner, value = hold count).
-- KEYS[1] lock, KEYS[2] fencing counter
-- ARGV[1] lease ms, ARGV[2] owner field, ARGV[3] '1' reentrant, ARGV[4] '1' fenced
-- Returns {1, count, token} when acquired, {0, pttl} when another owner holds it,
-- {2} when the owner holds it already and re-entry is not allowed.
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine or redis.call('exists', KEYS[1]) == 0 then
  if mine and ARGV[3] ~= '1' then
    return {2}
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = 0
  if ARGV[4] == '1' then
    token = redis.call('incr', KEYS[2])
  end
  return {1, count, token}
end
return {0, redis.call('pttl', KEYS[1])}
