package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"

	"github.com/tfmirror/tfmirror/layout"
)

// A provenance record is not signed: a forged h1: in it must never reach a
// lock file. Lock computes h1: from the archive the signed SHA256SUMS
// lists, and refuses a record that says otherwise.
func TestLockRefusesForgedProvenance(t *testing.T) {
	h, l := builtTree(t)
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0")
	path := filepath.Join(h.root, layout.ProvenancePath(p, v))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := layout.DecodeProvenance(data)
	if err != nil {
		t.Fatal(err)
	}
	linux, darwin := prov.Archives["linux_amd64"], prov.Archives["darwin_arm64"]
	forged := strings.Replace(string(data), string(linux.H1), string(darwin.H1), 1)
	if err := os.WriteFile(path, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	entry, err := l.Lock(context.Background(), need("hashicorp/foo"), mustPlatforms("linux_amd64"))
	var verr *VerificationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "unpacks to "+string(linux.H1)) {
		t.Fatalf("Lock with a forged provenance h1: entry %v, err = %v; want a VerificationError", entry.Hashes, err)
	}
}

// An archive replaced by other bytes (of any content) is refused, even
// when its provenance record is left as it was.
func TestLockRefusesArchiveNotInSignedSums(t *testing.T) {
	h, l := builtTree(t)
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0")
	linux, darwin := mustPlatforms("linux_amd64")[0], mustPlatforms("darwin_arm64")[0]
	other, err := os.ReadFile(filepath.Join(h.root, layout.ArchivePath(p, v, darwin)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root, layout.ArchivePath(p, v, linux)), other, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = l.Lock(context.Background(), need("hashicorp/foo"), nil)
	var verr *VerificationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "signed SHA256SUMS") {
		t.Fatalf("Lock over a replaced archive: err = %v; want a VerificationError naming the signed SHA256SUMS", err)
	}
}
