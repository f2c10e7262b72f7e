package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "provider", "0 providers"},
		{1, "provider", "1 provider"},
		{2, "provider", "2 providers"},
		{1, "advisory", "1 advisory"},
		{3, "advisory", "3 advisories"},
		{2, "key", "2 keys"},
		{2, "module version", "2 module versions"},
		{-1, "package", "-1 packages"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
