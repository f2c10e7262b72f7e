// Package size reads and writes sizes in bytes the one way tfmirror does
// everywhere, flags, manifest, output and the catalog page alike: decimal
// units (kB, MB, GB, TB: powers of 1000) when written, and on input also
// the binary ones (KiB, MiB, GiB, TiB: powers of 1024), or a plain number
// of bytes. It owns that convention and nothing else.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units by their lower-case name.
var units = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// Parse reads a size: a whole number of bytes, or a number and a unit
// ("500MB", "1.5 GiB", "64k"). It refuses negative sizes and sizes that
// do not fit 63 bits.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := units[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("invalid size %q: write bytes, or a number and a unit such as 500MB or 1GiB", s)
	}
	if mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid size %q: a number of bytes is whole", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %w", s, err)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return int64(v), nil
}

// Format writes n bytes for people: "512 B", "5.2 MB", "1.1 GB".
func Format(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Value is a flag holding a size (pflag's Value), bound to an int64.
type Value struct{ P *int64 }

func (v Value) String() string {
	if v.P == nil {
		return "0"
	}
	return strconv.FormatInt(*v.P, 10)
}

// Set parses s with Parse.
func (v Value) Set(s string) error {
	n, err := Parse(s)
	if err != nil {
		return err
	}
	*v.P = n
	return nil
}

// Type names the flag's kind in help.
func (Value) Type() string { return "size" }
