-- KEYS[1] the bucket; ARGV: rate per second, capacity, tokens wanted (negative: tokens given back), whole (1: all
-- or nothing). Returns {granted, seconds until the refused part could be granted (as text: Lua numbers returned to
-- Redis lose their fraction)}. A whole request larger than the capacity is granted when the bucket is full and
-- leaves it in debt, so that a batch larger than one second's rate still gets through at that rate.
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local whole = ARGV[4] == '1'
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
    tokens = capacity
    at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local granted = 0
local wait = 0
if want < 0 then
    tokens = math.min(capacity, tokens - want)
elseif whole then
    local need = math.min(want, capacity)
    if tokens >= need then
        granted = want
    else
        wait = (need - tokens) / rate
    end
else
    granted = math.max(0, math.min(want, math.floor(tokens)))
    if granted == 0 and want > 0 then
        wait = (1 - tokens) / rate
    end
end
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate * 1000) + 1000)
return {granted, tostring(wait)}
