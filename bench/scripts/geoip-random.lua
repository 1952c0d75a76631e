-- wrk script for bench/scripts/geoip-http.sh: GET /{random IPv4}/json/ with a fresh
-- address per request (first octet 1-223 without 10 and 127; the rest uniform), the same
-- sequence for both servers (fixed seed per thread). Kept to a few string operations so the
-- generator costs less than the server.
local counter = 0

function init(args)
	counter = counter + 1
	math.randomseed(12345 + counter * 7919)
end

local random = math.random
local format = string.format

function request()
	local a = random(1, 221)
	if a >= 10 then a = a + 1 end
	if a >= 127 then a = a + 1 end
	return wrk.format(nil, format("/%d.%d.%d.%d/json/", a, random(0, 255), random(0, 255), random(0, 255)))
end
