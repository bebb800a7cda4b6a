package layout

// Latch is the countdown latch's layout (countdown: Redisson's RCountDownLatch). The latch is a
// string under N, its count, without expiry; a latch at zero has no key.
var Latch = struct {
	// Channel, "redisson_countdownlatch__channel__{N}": hears "0" when the count reaches zero and
	// "1" when the latch is set or deleted. Redisson builds it without prefixName: the braces are
	// added whatever N holds (core.Names.Braced), unless on a cluster that would leave N's slot, where
	// the form Fallback ("redisson_countdownlatch__channel_:{N}", with the side keys' rule) is taken.
	Channel, Fallback string
}{
	Channel:  "redisson_countdownlatch__channel__",
	Fallback: "redisson_countdownlatch__channel_",
}
