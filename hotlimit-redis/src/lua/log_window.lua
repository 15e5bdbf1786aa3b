-- The exact log's rule, shared by sliding_log.lua and multi_window.lua (the crate puts this in
-- front of them, after now.lua): a log is a list of grant stamps (µs), newest first, at most
-- `limit` long. Returns the list's length, its newest stamp (nil when empty) and how many
-- stamps are still in the window (after now − period): a prefix of the list, found by binary
-- search.
local function log_window(key, now, period)
  local len = redis.call('LLEN', key)
  local edge = now - period
  local newest = nil
  if len > 0 then
    newest = tonumber(redis.call('LINDEX', key, 0))
  end
  local lo, hi = 0, len
  if newest ~= nil and newest <= edge then
    hi = 0
  end
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if tonumber(redis.call('LINDEX', key, mid)) > edge then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return len, newest, lo
end
