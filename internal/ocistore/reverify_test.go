package ocistore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/layout"
)

// A blob is named by its digest, but a damaged disk or a broken registry
// serves other bytes under it. With verify, Held reads every package blob
// again and holds only those whose bytes are their digest; without, it
// trusts the digest (the cheap rebuild). A push with VerifyExisting reads
// the release's blobs the repository holds and replaces a damaged one: in
// an image layout the blob file is rewritten; a registry that keeps the
// damaged blob when it is sent again (distribution does) fails the push,
// naming the blob.
func TestVerifyExistingRereadsBlobs(t *testing.T) {
	foo := addrs.MustParseProvider("hashicorp/foo")
	plat := addrs.MustParsePlatform("linux_amd64")
	for _, tc := range []struct {
		name string
		// open returns the store and the path of a blob's file on disk.
		open func(t *testing.T) (*ocistore.Store, func(hex string) string)
	}{
		{"layout", func(t *testing.T) (*ocistore.Store, func(string) string) {
			dir := t.TempDir()
			return openStore(t, "oci-layout://"+dir, nil), func(hex string) string {
				return filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo", "blobs", "sha256", hex)
			}
		}},
		{"registry", func(t *testing.T) (*ocistore.Store, func(string) string) {
			srv := registrytest.Start(t)
			return openStore(t, "oci://"+template(srv), registryEnviron(t, srv)), func(hex string) string {
				return filepath.Join(srv.Dir, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, blobFile := tc.open(t)
			rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
			if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			good := rel.zips["linux_amd64"]
			file := blobFile(sha256Hex(good))
			if data, err := os.ReadFile(file); err != nil || !bytes.Equal(data, good) {
				t.Fatalf("the package's blob is not at %s (%v)", file, err)
			}
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x40
			if err := os.WriteFile(file, bad, 0o644); err != nil {
				t.Fatal(err)
			}

			d := s.Destination(false)
			q := []layout.HeldQuery{{Version: rel.Version, Platforms: []addrs.Platform{plat}}}
			for _, verify := range []bool{false, true} {
				held, err := d.Held(t.Context(), foo, q, verify)
				if err != nil {
					t.Fatalf("Held(verify %v): %v", verify, err)
				}
				if want := !verify; (len(held) == 1) != want {
					t.Errorf("Held(verify %v) of a damaged blob = %v; want held %v", verify, held, want)
				}
			}

			again := rel.Release
			again.VerifyExisting = true
			_, err := s.Push(t.Context(), again, ocistore.PushOptions{Policy: layout.Repair})
			data, _ := os.ReadFile(file)
			repaired := bytes.Equal(data, good)
			t.Logf("push with VerifyExisting: repaired %v, %v", repaired, err)
			switch {
			case err == nil && repaired:
			case err != nil && !repaired && tc.name == "registry":
				// The registry kept the damaged blob: the push says so.
				if !errors.Is(err, ocistore.ErrDigestMismatch) || !strings.Contains(err.Error(), "sha256:"+sha256Hex(good)) {
					t.Errorf("the push's error does not name the damaged blob as such: %v", err)
				}
				return
			default:
				t.Fatalf("push with VerifyExisting over a damaged blob: repaired %v, error %v", repaired, err)
			}
			if held, err := d.Held(t.Context(), foo, q, true); err != nil || len(held) != 1 {
				t.Errorf("Held(verify) after the repair = %v, %v; want the package", held, err)
			}
		})
	}
}
