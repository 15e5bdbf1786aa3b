-- The prelude of both scripts: the crate puts it in front of gcra.lua and sliding_log.lua at
-- compile time, so each is still one script, sent and invoked by one hash in one round trip.
--
-- ARGV[4]  optional: `now` in microseconds (the crate's test hook); otherwise the server's TIME
--
-- Sets `now`, microseconds, and `ttl_extra`, milliseconds to add to every expiry.

local now
-- The test hook's `now` is not the server's clock, while expiry is: keys then get a minute more
-- to live, so that a trace replayed in a few real milliseconds keeps its state.
local ttl_extra = 0
if ARGV[4] then
  now = tonumber(ARGV[4])
  ttl_extra = 60000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
