package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
)

// An archive longer than the size the origin announced is refused as it
// arrives, whatever the source does: no byte past the size is written,
// and nothing of it is kept for a later run.
func TestDownloadLongerThanAnnouncedIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(s *fakeSource, k, u string)
	}{
		{"the sink refuses", func(s *fakeSource, k, u string) {
			m := s.metas[k]
			m.Size = int64(len(s.files[u]) - 1)
			s.metas[k] = m
		}},
		{"the source refuses", func(s *fakeSource, _, u string) {
			s.failURL[u] = errors.Join(errors.New("read: the body exceeds the limit of 100 bytes"), ErrTooLarge)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
			tt.setup(h.src, "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64",
				"registry.opentofu.org/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_linux_amd64.zip")
			r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"))
			err := r.Err()
			var perr *PackageError
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &perr) || !strings.Contains(err.Error(), "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64: download terraform-provider-foo_1.0.0_linux_amd64.zip") {
				t.Fatalf("err = %v, want a PackageError wrapping ErrTooLarge that names the package", err)
			}
			if h.exists(fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip") {
				t.Error("the refused archive was published")
			}
			partials, _ := os.ReadDir(filepath.Join(h.root, layout.PrivateDirName, "partial"))
			if len(partials) != 0 {
				t.Errorf("%d partial downloads kept", len(partials))
			}
		})
	}
}
