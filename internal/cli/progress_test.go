package cli

import (
	"strings"
	"testing"
)

func TestJSONHasStartedEvents(t *testing.T) {
	o, dir := fooOrigin(t)
	code, stdout, _ := o.run(t, dir, "build", "--json")
	started := `{"event":"started","provider":"registry.opentofu.org/hashicorp/foo","version":"1.0.0","platform":"linux_amd64","time":"`
	if code != ExitOK || !strings.Contains(stdout, started) || strings.Index(stdout, started) > strings.Index(stdout, `"event":"package"`) {
		t.Errorf("exit %d; want a started event before the package event:\n%s", code, stdout)
	}
}
