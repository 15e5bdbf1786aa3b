-- The exact sliding log (the core's `SlidingLog`) with its state in Redis: a list of grant
-- times in microseconds on the server's clock, newest first, at most `limit` entries.
--
-- KEYS[1]  the limited key
-- ARGV[1]  limit, the most permits in any window of `period` (>= 1)
-- ARGV[2]  period, microseconds (>= 1, < 2^52)
-- ARGV[3]  n, the permits asked for (0 <= n <= limit; 0 only reads)
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook); otherwise the server's TIME
--
-- Returns {granted 0/1, remaining, retry_after_us, reset_us}, all integers.
--
-- A grant at `now` is recorded at max(now, newest recorded time), so the list stays sorted even
-- if the server's clock goes back ("no time has passed"). A grant at t has left the window at
-- `now` once t <= now - period. The log is a ring of `limit` slots, oldest first: the slots never
-- used, then the list from its tail. A request for n is granted iff its n oldest slots are free;
-- sorted, that is iff the n-th oldest is. A rejected request stores nothing and does not touch
-- the expiry; a grant pushes n entries, trims to `limit`, and sets the expiry to when its
-- entries leave the window (rounded up to the next millisecond): the list is then all stale.

local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
-- `now` (µs) and `ttl_extra` (ms) come from now.lua, which the crate puts in front of this script.

local key = KEYS[1]
-- Entries still in the window are a prefix of the list (newest first): its length (log_window.lua).
local len, newest, used = log_window(key, now, period)
local free = limit - used
if free < 0 then
  free = 0
end

local reset = 0
if used > 0 then
  reset = newest + period - now
end

if n > free then
  -- The n-th oldest slot: past the (limit - len) never-used ones, the list entry at
  -- oldest-first position n - 1 - (limit - len), i.e. newest-first index below.
  local index = len - 1 - (n - 1 - (limit - len))
  local blocking = tonumber(redis.call('LINDEX', key, index))
  return {0, free, blocking + period - now, reset}
end
if n == 0 then
  return {1, free, 0, reset}
end

local stamp = now
if newest ~= nil and newest > stamp then
  stamp = newest
end
-- LPUSH in chunks (Lua's unpack has a stack limit).
local pushed = 0
while pushed < n do
  local chunk = {}
  local m = n - pushed
  if m > 1000 then
    m = 1000
  end
  for i = 1, m do
    chunk[i] = stamp
  end
  redis.call('LPUSH', key, unpack(chunk))
  pushed = pushed + m
end
if len + n > limit then
  redis.call('LTRIM', key, 0, limit - 1)
end
local ahead = stamp + period - now
local ttl = (ahead - ahead % 1000) / 1000
if ahead % 1000 > 0 then
  ttl = ttl + 1
end
ttl = ttl + ttl_extra
redis.call('PEXPIRE', key, ttl)
return {1, free - n, 0, ahead}
