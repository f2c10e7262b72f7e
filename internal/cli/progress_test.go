package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/mirror"
)

func TestProgressStatus(t *testing.T) {
	p := &progressLine{total: 30}
	got := p.status(mirror.Progress{Done: 10, Bytes: 50_000_000}, 2*time.Second)
	want := "[10/30 packages] 50.0 MB at 25.0 MB/s, about 4s left"
	if got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	if got := p.status(mirror.Progress{Done: 30, Bytes: 1}, time.Second); strings.Contains(got, "left") {
		t.Errorf("a finished build still estimates time left: %q", got)
	}
}

func TestJSONHasStartedEvents(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, _ := o.run(t, dir, "build", "--json")
	started := `{"event":"started","provider":"registry.opentofu.org/hashicorp/foo","version":"1.0.0","platform":"linux_amd64"}`
	if code != ExitOK || !strings.Contains(stdout, started+"\n") || strings.Index(stdout, started) > strings.Index(stdout, `"event":"package"`) {
		t.Errorf("exit %d; want a started event before the package event:\n%s", code, stdout)
	}
}
