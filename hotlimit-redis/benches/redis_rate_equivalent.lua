-- A GCRA script written from go-redis/redis_rate's documented algorithm (not its code), for the
-- benchmark only: the design most Go services use, measured beside ours.
--
-- Its choices, kept here so the comparison is fair: time is the server's TIME as float seconds
-- since 2017-01-01 (to keep precision in a double), the TAT is stored as a float, the expiry is
-- in whole seconds (EX, rounded up), and the retry/reset times are returned as strings.
--
-- KEYS[1] key; ARGV: burst, rate (permits per period), period (seconds), cost.
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst

local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) + tonumber(t[2]) / 1000000

local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
end

local new_tat = tat + increment
local allow_at = new_tat - burst_offset
local diff = now - allow_at
local remaining = math.floor(diff / emission_interval)

if remaining < 0 then
  return {0, 0, tostring(-diff), tostring(tat - now)}
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call('SET', KEYS[1], new_tat, 'EX', math.ceil(reset_after))
end
return {cost, remaining, tostring(-1), tostring(reset_after)}
