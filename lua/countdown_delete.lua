-- Delete a latch (count 0 again). KEYS[1] latch, KEYS[2] channel; ARGV[1] publish command.
-- Returns 1 when it existed; then the channel gets '1', as Redisson's delete sends.
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '1')
  return 1
end
return 0
