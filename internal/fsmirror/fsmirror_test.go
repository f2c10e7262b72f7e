package fsmirror_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/fsmirror"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

var (
	ctx     = context.Background()
	idn     = addrs.MustParseProvider("bücher.example/acme/foo")
	plain   = addrs.MustParseProvider("example.com/acme/bar")
	v1      = addrs.MustParseVersion("1.0.0")
	linux   = addrs.Platform{OS: "linux", Arch: "amd64"}
	darwin  = addrs.Platform{OS: "darwin", Arch: "arm64"}
	windows = addrs.Platform{OS: "windows", Arch: "amd64"}
)

// buffer is a mirror.Sink in memory, with an optional Limit.
type buffer struct {
	bytes.Buffer
	limit int64
}

func (b *buffer) Reset() error   { b.Buffer.Reset(); return nil }
func (b *buffer) Limit() int64   { return b.limit }
func (b *buffer) String() string { return b.Buffer.String() }

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func open(t *testing.T, dir string) *fsmirror.Reader {
	t.Helper()
	r, err := fsmirror.Open(dir, hashing.ZipLimits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func fetch(t *testing.T, r *fsmirror.Reader, hp mirror.HashedPackage) []byte {
	t.Helper()
	var b buffer
	if err := r.Fetch(ctx, hp.Ref, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A packed mirror as OpenTofu reads it: Unicode host directory, names
// compared without case, other files (the network mirror's JSON) ignored.
func TestPackedLayout(t *testing.T) {
	dir := t.TempDir()
	zipLinux := zipOf(t, map[string]string{"terraform-provider-foo": "linux"})
	zipDarwin := zipOf(t, map[string]string{"terraform-provider-foo": "darwin"})
	write(t, filepath.Join(dir, "bücher.example/acme/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"), zipLinux, 0o644)
	write(t, filepath.Join(dir, "bücher.example/acme/foo/Terraform-Provider-Foo_1.0.0_DARWIN_ARM64.ZIP"), zipDarwin, 0o644)
	write(t, filepath.Join(dir, "bücher.example/acme/foo/index.json"), []byte(`{"versions":{"9.9.9":{}}}`), 0o644)
	write(t, filepath.Join(dir, "bücher.example/acme/foo/terraform-provider-foo_2.0.0.zip"), zipLinux, 0o644)
	r := open(t, dir)

	vs, err := r.Versions(ctx, idn)
	if err != nil || len(vs) != 1 || vs[0].String() != "1.0.0" {
		t.Fatalf("versions %v, %v; want [1.0.0]", vs, err)
	}
	for plat, want := range map[addrs.Platform][]byte{linux: zipLinux, darwin: zipDarwin} {
		hp, err := r.Describe(ctx, idn, v1, plat)
		if err != nil {
			t.Fatal(err)
		}
		if len(hp.Hashes) != 1 || hp.Hashes[0] != hashing.ZH(sha256.Sum256(want)) || hp.Size != int64(len(want)) {
			t.Errorf("%s: described as %v, %d bytes; want the zip's zh: and size", plat, hp.Hashes, hp.Size)
		}
		if got := fetch(t, r, hp); !bytes.Equal(got, want) {
			t.Errorf("%s: fetched other bytes than the zip", plat)
		}
	}
	if _, err := r.Describe(ctx, idn, v1, windows); !errors.Is(err, mirror.ErrPlatformUnavailable) {
		t.Errorf("a platform the mirror lacks: %v, want ErrPlatformUnavailable", err)
	}
	if _, err := r.Versions(ctx, plain); !errors.Is(err, layout.ErrNotInMirror) {
		t.Errorf("a provider the mirror lacks: %v, want ErrNotInMirror", err)
	}
}

// The ASCII form of a host directory is read too.
func TestPunycodeHostDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, idn.Hostname.String(), "acme/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"), zipOf(t, map[string]string{"a": "b"}), 0o644)
	if vs, err := open(t, dir).Versions(ctx, idn); err != nil || len(vs) != 1 {
		t.Fatalf("versions %v, %v", vs, err)
	}
}

// An unpacked package is offered as a zip that depends only on its
// content, whose unpacked h1: is the directory's, executable bits kept.
func TestUnpackedLayout(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "example.com/acme/bar/1.0.0/linux_amd64")
	write(t, filepath.Join(pkg, "terraform-provider-bar_v1.0.0"), []byte("#!/bin/sh\necho bar\n"), 0o755)
	write(t, filepath.Join(pkg, "docs/README.md"), []byte("read me\n"), 0o644)
	r := open(t, dir)
	hp, err := r.Describe(ctx, plain, v1, linux)
	if err != nil {
		t.Fatal(err)
	}
	first := fetch(t, r, hp)
	if second := fetch(t, r, hp); !bytes.Equal(first, second) {
		t.Fatal("two packings of one directory differ")
	}
	if hp.Hashes[0] != hashing.ZH(sha256.Sum256(first)) || hp.Size != int64(len(first)) {
		t.Errorf("described as %v, %d bytes; the packed zip is %s, %d bytes", hp.Hashes, hp.Size, hashing.ZH(sha256.Sum256(first)), len(first))
	}
	zpath := filepath.Join(t.TempDir(), "p.zip")
	write(t, zpath, first, 0o644)
	sums, err := hashing.HashArchive(zpath, sha256.Sum256(first), hashing.DefaultZipLimits)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dirhash.HashDir(pkg, "", dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if string(sums.H1Unpacked) != want {
		t.Errorf("the packed zip unpacks to %s, the directory hashes to %s", sums.H1Unpacked, want)
	}
	zr, err := zip.NewReader(bytes.NewReader(first), int64(len(first)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "terraform-provider-bar_v1.0.0" && f.Mode().Perm()&0o111 == 0 {
			t.Errorf("the executable lost its executable bit: %v", f.Mode())
		}
	}
}

// Nothing leads the reader out of the mirror: a linked host directory or
// a link inside an unpacked package that points outside is refused, a
// linked zip is not listed, and a sink's limit holds.
func TestHostileMirror(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "acme/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"), zipOf(t, map[string]string{"a": "b"}), 0o644)
	write(t, filepath.Join(outside, "secret"), []byte("secret"), 0o600)

	t.Run("linked host directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(outside, filepath.Join(dir, "bücher.example")); err != nil {
			t.Fatal(err)
		}
		_, err := open(t, dir).Versions(ctx, idn)
		if err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("versions through a linked host directory: %v, want a refusal", err)
		}
	})
	t.Run("linked zip", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "bücher.example/acme/foo"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "acme/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"), filepath.Join(dir, "bücher.example/acme/foo/terraform-provider-foo_1.0.0_linux_amd64.zip")); err != nil {
			t.Fatal(err)
		}
		if vs, err := open(t, dir).Versions(ctx, idn); !errors.Is(err, layout.ErrNotInMirror) {
			t.Errorf("a linked zip was listed: %v, %v", vs, err)
		}
	})
	t.Run("link out of an unpacked package", func(t *testing.T) {
		dir := t.TempDir()
		pkg := filepath.Join(dir, "example.com/acme/bar/1.0.0/linux_amd64")
		write(t, filepath.Join(pkg, "terraform-provider-bar"), []byte("x"), 0o755)
		if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(pkg, "leak")); err != nil {
			t.Fatal(err)
		}
		_, err := open(t, dir).Describe(ctx, plain, v1, linux)
		if err == nil || !strings.Contains(err.Error(), "leak") {
			t.Errorf("packing a link out of the mirror: %v, want a refusal naming it", err)
		}
	})
	t.Run("sink limit", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "example.com/acme/bar/terraform-provider-bar_1.0.0_linux_amd64.zip"), zipOf(t, map[string]string{"a": strings.Repeat("b", 4096)}), 0o644)
		r := open(t, dir)
		hp, err := r.Describe(ctx, plain, v1, linux)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Fetch(ctx, hp.Ref, &buffer{limit: 10}); !errors.Is(err, mirror.ErrTooLarge) {
			t.Errorf("a fetch past the sink's limit: %v, want ErrTooLarge", err)
		}
	})
	t.Run("refs outside the mirror", func(t *testing.T) {
		r := open(t, t.TempDir())
		for _, ref := range []string{"packed:../secret", "packed:/etc/passwd", "other:x", "unpacked:a/../../b"} {
			if err := r.Fetch(ctx, ref, &buffer{}); err == nil {
				t.Errorf("Fetch(%q) succeeded", ref)
			}
		}
	})
}
