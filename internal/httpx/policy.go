package httpx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults of the transfer limits, chosen so that no working origin comes
// near them while no hostile or broken one can hold a build or fill a disk:
//
//   - DefaultSpeedLimit over DefaultSpeedTime (1 KiB/s over 30s, curl's
//     --speed-limit and --speed-time): a healthy origin sends megabytes a
//     second and at 1 KiB/s even a 5 MB provider would take over an hour,
//     while 30s rides out congestion and TCP retransmission backoff. With
//     the default 4 retries a dripping origin costs about 2.5 minutes.
//   - DefaultMaxBodyBytes (1 GiB): the largest providers (aws, azurerm,
//     google) are about 200 MB zipped; 1 GiB leaves five times that, and
//     matches the 4 GiB unpacked-size limit at the 3-4x ratio at which
//     provider binaries compress. Eight parallel downloads then hold at
//     most 8 GiB of disk.
const (
	DefaultSpeedLimit   = 1 << 10 // bytes per second
	DefaultSpeedTime    = 30 * time.Second
	DefaultMaxBodyBytes = 1 << 30
)

// MaxRetryAfter is the longest wait a server's Retry-After header can ask
// for. A 429 or 503 response asking for longer ends the retries at once:
// waiting that long in a build is worse than failing and saying why.
const MaxRetryAfter = 5 * time.Minute

// Policy says how hard a Fetcher tries. Zero timeouts mean no limit; zero
// Retries means a single attempt. The CLI fills it from flags (and the
// manifest), starting from DefaultPolicy.
type Policy struct {
	// Retries is how many more attempts may follow a failed first one.
	Retries int
	// MinBackoff is the wait before the first retry; it doubles for each
	// later one, up to MaxBackoff. Each wait is jittered: a random duration
	// between half of it and all of it ("equal jitter").
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds the TCP connection and, separately, the TLS
	// handshake (used by NewTransport).
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for the response headers once the
	// request is sent (used by NewTransport).
	HeaderTimeout time.Duration
	// StallTimeout fails an attempt whose body delivers no bytes for this
	// long; the attempt is then retried like a dropped connection.
	StallTimeout time.Duration
	// SpeedLimit and SpeedTime fail an attempt whose body (a document or
	// a download) brings fewer than SpeedLimit bytes a second, on average,
	// over a window of SpeedTime, as curl's --speed-limit and --speed-time
	// do; the attempt is then retried like a stalled one. Either one zero
	// turns the check off. The windows start when the headers have
	// arrived, so a body that trickles is caught after SpeedTime whatever
	// it sends.
	SpeedLimit int64
	SpeedTime  time.Duration
	// MaxBodyBytes caps the body Fetch takes from one URL, resumed parts
	// included: a longer one fails for good (ErrTooLarge) when its
	// Content-Length announces it, else as soon as the excess arrives,
	// and no byte past the cap reaches the sink. Zero means no cap.
	// Document has its own, smaller limits.
	MaxBodyBytes int64
}

// DefaultPolicy returns the policy tfmirror uses unless told otherwise.
func DefaultPolicy() Policy {
	return Policy{
		Retries:        4,
		MinBackoff:     500 * time.Millisecond,
		MaxBackoff:     30 * time.Second,
		ConnectTimeout: 15 * time.Second,
		HeaderTimeout:  60 * time.Second,
		StallTimeout:   60 * time.Second,
		SpeedLimit:     DefaultSpeedLimit,
		SpeedTime:      DefaultSpeedTime,
		MaxBodyBytes:   DefaultMaxBodyBytes,
	}
}

// Validate reports a setting that makes no sense.
func (p Policy) Validate() error {
	if p.Retries < 0 {
		return fmt.Errorf("retries must be 0 or more, not %d", p.Retries)
	}
	if p.SpeedLimit < 0 {
		return fmt.Errorf("speed limit must be 0 (no limit) or more bytes per second, not %d", p.SpeedLimit)
	}
	if p.MaxBodyBytes < 0 {
		return fmt.Errorf("maximum archive size must be 0 (no limit) or more bytes, not %d", p.MaxBodyBytes)
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"minimum backoff", p.MinBackoff},
		{"maximum backoff", p.MaxBackoff},
		{"connect timeout", p.ConnectTimeout},
		{"header timeout", p.HeaderTimeout},
		{"stall timeout", p.StallTimeout},
		{"speed time", p.SpeedTime},
	} {
		if d.value < 0 {
			return fmt.Errorf("%s must be 0 (no limit) or more, not %s", d.name, d.value)
		}
	}
	if p.MinBackoff > p.MaxBackoff {
		return fmt.Errorf("minimum backoff %s is more than the maximum %s", p.MinBackoff, p.MaxBackoff)
	}
	return nil
}

// Backoff returns the wait before retry number retry (1 for the first
// retry): MinBackoff doubled retry-1 times, at most MaxBackoff, with equal
// jitter. Every client that retries by the run's policy waits by it.
func (p Policy) Backoff(retry int) time.Duration {
	d := p.MinBackoff
	for i := 1; i < retry && d < p.MaxBackoff; i++ {
		if d > p.MaxBackoff/2 {
			d = p.MaxBackoff
		} else {
			d *= 2
		}
	}
	d = min(d, p.MaxBackoff)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// RetryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
