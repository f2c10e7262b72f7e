package size

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "500MB": 500_000_000, "1GiB": 1 << 30, "1.5 GiB": 3 << 29, "64k": 64_000,
		"2kib": 2048, "10 B": 10, "1TB": 1e12, "1 tib": 1 << 40,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5", "MB", "1 XB", "1e3", "99999999999 TB", "1GiBs"} {
		if n, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %d; want an error", bad, n)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 5_200_000: "5.2 MB", 1 << 30: "1.1 GB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
