-- The prelude of both scripts: the crate puts it in front of gcra.lua and sliding_log.lua at
-- compile time, so each is still one script, sent and invoked by one hash in one round trip.
--
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook; 0 or absent: none, the
--          server's TIME)
--
-- Sets `now`, microseconds, and `ttl_extra`, milliseconds to add to every expiry.

local now
-- The test hook's `now` is not the server's clock, while expiry is: keys then get a minute more
-- to live, so that a trace replayed in a few real milliseconds keeps its state.
local ttl_extra = 0
local hook = tonumber(ARGV[4] or '0') or 0
if hook > 0 then
  now = hook
  ttl_extra = 60000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Fenced mode (ARGV[5] = the fence F in microseconds, KEYS[2] = the key space's marker, a key
-- with no expiry): the marker holds the time it was (re)made. A server that lost its data (a
-- restart without persistence, FLUSHALL, a failover to an empty replica) lost the marker too, so
-- the first call after the loss remakes it, and for F after that a key that is missing may have
-- been lost: `fenced_tat` is then the marker's time + F (the key restarts full: no grant before
-- the loss can have reached past it), otherwise nil. F is the longest a TAT can run ahead of
-- `now` (τ per decision, τ + the lease queue for leases). Costs one GET per call (and a SET
-- once per loss).
local fenced_tat = nil
local fence = tonumber(ARGV[5] or '0') or 0
if fence > 0 then
  local mark = tonumber(redis.call('GET', KEYS[2]))
  if not mark then
    mark = now
    redis.call('SET', KEYS[2], now)
  end
  if now < mark + fence then
    fenced_tat = mark + fence
  end
end
