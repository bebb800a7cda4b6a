package layout

// RateLimiter is the rate limiter's layout (ratelimit: Redisson's RRateLimiter). The limiter is a
// hash under N of the fields Rate, Interval (ms), Type (ratelimit.Overall 0, ratelimit.PerClient 1)
// and KeepAlive (ms); beside it, its window:
var RateLimiter = struct {
	// Value, "{N}:value": the permits left (a string).
	Value string
	// Permits, "{N}:permits" (sorted set): the grants made within the interval, each the member
	// struct.pack('Bc0I', #id, id, permits) (a one-byte length, a random id, the permits as a 4-byte
	// little-endian unsigned int) scored by its time in ms. A PerClient limiter keeps one window
	// per client: Value and Permits, each followed by ":<client id>".
	Permits string
	// The hash's fields.
	Rate, Interval, Type, KeepAlive string
}{
	Value:     ":value",
	Permits:   ":permits",
	Rate:      "rate",
	Interval:  "interval",
	Type:      "type",
	KeepAlive: "keepAliveTime",
}
