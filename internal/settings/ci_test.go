package settings

import "testing"

func TestInCI(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{nil, false},
		{[]string{"CI=true"}, true},
		{[]string{"CI=TRUE"}, true},
		{[]string{"CI=1"}, true},
		{[]string{"CI=false"}, false},
		{[]string{"CI="}, false},
		{[]string{"CI=true", "CI=false"}, false}, // the last one counts, as in a process
	} {
		if got := InCI(c.env); got != c.want {
			t.Errorf("InCI(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}
