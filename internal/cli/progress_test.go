package cli

import (
	"strings"
	"testing"
)

func TestJSONHasStartedEvents(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, _ := o.run(t, dir, "build", "--json")
	started := `{"event":"started","provider":"registry.opentofu.org/hashicorp/foo","version":"1.0.0","platform":"linux_amd64","time":"`
	if code != ExitOK || !strings.Contains(stdout, started) || strings.Index(stdout, started) > strings.Index(stdout, `"event":"package"`) {
		t.Errorf("exit %d; want a started event before the package event:\n%s", code, stdout)
	}
}
