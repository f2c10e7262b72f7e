// Command generate writes examples/quickstart/upstream: a tiny provider
// mirror, signed like a registry release, that the quickstart mirrors from
// without any network. It is kept in the repository (a few kilobytes) and
// made again only when the quickstart's upstream changes:
//
//	go run ./examples/quickstart/generate
//
// The provider, registry.tfmirror.test/examples/hello, has two versions for
// four platforms; each package holds a small shell script named as a
// provider binary (it is installed, never run). Every release keeps its
// SHA256SUMS, a detached signature by a key made here, and that key, as
// tfmirror keeps what an origin signed, so a build from it checks the
// signature end to end. The private key is thrown away.
package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

const provider = "registry.tfmirror.test/examples/hello"

var (
	versions  = []string{"0.1.0", "0.2.0"}
	platforms = []string{"darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"}
)

func main() {
	out := filepath.Join("examples", "quickstart", "upstream")
	if err := generate(out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func generate(out string) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	key, armored, err := newKey()
	if err != nil {
		return err
	}
	dir, err := layout.Open(out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "quickstart-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	p := addrs.MustParseProvider(provider)
	var releases []layout.Release
	for _, v := range versions {
		rel, err := release(p, addrs.MustParseVersion(v), key, armored, work)
		if err != nil {
			return err
		}
		releases = append(releases, rel)
	}
	if _, err := dir.PublishAll(context.Background(), layout.Repair, releases); err != nil {
		return err
	}
	if err := dir.Close(); err != nil {
		return err
	}
	// The lock and staging area of the tree are not part of the example.
	return os.RemoveAll(filepath.Join(out, layout.PrivateDirName))
}

// release makes one version's packages, SHA256SUMS, signature and
// provenance.
func release(p addrs.Provider, v addrs.Version, key *openpgp.Entity, armored, work string) (layout.Release, error) {
	rel := layout.Release{Provider: p, Version: v}
	prov := layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}, KeyID: strings.ToUpper(key.PrimaryKey.KeyIdString()), SigningKeys: []string{armored}}
	var sums strings.Builder
	for _, name := range platforms {
		plat := addrs.MustParsePlatform(name)
		data, err := packageZip(p, v, plat)
		if err != nil {
			return rel, err
		}
		file := layout.ArchiveName(p, v, plat)
		staged := filepath.Join(work, file)
		if err := os.WriteFile(staged, data, 0o644); err != nil {
			return rel, err
		}
		sum := sha256.Sum256(data)
		h, err := hashing.HashArchive(staged, sum, hashing.DefaultZipLimits)
		if err != nil {
			return rel, err
		}
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), file)
		rel.Archives = append(rel.Archives, layout.Archive{Platform: plat, Staged: staged, Hashes: h.All(), Move: true})
		prov.Archives[name] = layout.ProvenanceArchive{Filename: file, H1: h.H1Unpacked, ZH: h.ZH, Size: int64(len(data))}
	}
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, key, strings.NewReader(sums.String()), nil); err != nil {
		return rel, err
	}
	rel.Record = &layout.Record{Provenance: prov, Sums: []byte(sums.String()), Signature: sig.Bytes()}
	return rel, nil
}

// packageZip is one platform's package: a script named as the provider's
// binary, with fixed times.
func packageZip(p addrs.Provider, v addrs.Version, plat addrs.Platform) ([]byte, error) {
	name := fmt.Sprintf("terraform-provider-%s_v%s", p.Type, v)
	if plat.OS == "windows" {
		name += ".exe"
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	hdr := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "#!/bin/sh\necho 'the tfmirror quickstart provider %s %s for %s: installed, not meant to run'\n", p, v, plat)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newKey makes a throwaway Ed25519 signing key and its armored public key.
func newKey() (*openpgp.Entity, string, error) {
	e, err := openpgp.NewEntity("tfmirror quickstart", "throwaway example key", "quickstart@tfmirror.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, "", err
	}
	if err := e.Serialize(w); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return e, buf.String(), nil
}
