package mirror

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Platforms of a release whose archives are the same bytes (a pure-data
// provider built once) share a digest, and so a partial-download name:
// each must still be published from its own file.
func TestPlatformsWithIdenticalArchives(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	body := makeZip("the same for every platform")
	var sums strings.Builder
	for _, plat := range []string{"darwin_arm64", "linux_amd64", "windows_amd64"} {
		pl, _ := addrs.ParsePlatform(plat)
		name := layout.ArchiveName(p, v, pl)
		h.src.files["registry.opentofu.org/hashicorp/foo/1.0.0/"+name] = body
		meta := h.src.metas[key(p, v, pl)]
		meta.SHA256 = sha256.Sum256(body)
		h.src.metas[key(p, v, pl)] = meta
		fmt.Fprintf(&sums, "%x  %s\n", meta.SHA256, name)
	}
	h.src.files["registry.opentofu.org/hashicorp/foo/1.0.0/SHA256SUMS"] = []byte(sums.String())
	r := h.build(t, Options{Parallel: 1}, requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64", "windows_amd64")) // one at a time: each finds the partial download the one before left
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 3 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	for _, plat := range []string{"darwin_arm64", "linux_amd64", "windows_amd64"} {
		pl, _ := addrs.ParsePlatform(plat)
		if got := h.read(t, layout.ArchivePath(p, v, pl)); got != string(body) {
			t.Errorf("%s archive differs", plat)
		}
	}
}
