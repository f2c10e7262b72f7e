package cli

import (
	"strings"
	"testing"
)

func TestNetworkFlags(t *testing.T) {
	o, dir := fooOrigin(t)

	code, stdout, stderr := o.run(t, dir, "build", "--retries", "0", "--connect-timeout", "5s", "--header-timeout", "5s", "--stall-timeout", "5s")
	if code != ExitOK {
		t.Fatalf("build with network flags: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--retries", "-1"}, "retries must be 0 or more, not -1"},
		{[]string{"build", "--stall-timeout", "-1s"}, "stall timeout must be 0 (no limit) or more, not -1s"},
		{[]string{"lock", "--mirror", "https://mirror.example.com/", "--connect-timeout", "-5s"}, "connect timeout must be 0"},
		{[]string{"build", "--header-timeout", "soon"}, "invalid argument"},
		{[]string{"build", "--lock-timeout", "-5s"}, "--lock-timeout must not be negative"},
		{[]string{"prune", "--lock-timeout", "-1s"}, "--lock-timeout must not be negative"},
	} {
		code, _, stderr := o.run(t, dir, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stderr, ExitUsage, tt.want)
		}
	}
}
