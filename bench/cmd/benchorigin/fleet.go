package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// The "fleet" shape: a fleet of providers, many versions each, whose
// archives are tiny (the fleet is for measuring planning, not transfer),
// together with the network mirror tree that a build of all of it would
// have written: every release already mirrored, so that a build into a
// copy of the tree is a no-op. The tree is written directly, file by file,
// in tfmirror's layout (the JSON by layout.Encode from layout's own types;
// h1: by dirhash): index.json, <version>.json, the archives, each
// release's SHA256SUMS, its signature and provenance.json, catalog.json,
// and index.html, the page a build renders from the tree (htmlcatalog;
// rendered again whenever the corpus is loaded, by the tfmirror code this
// program is built with, so that a no-op build does not rewrite it). The
// key that signed the SHA256SUMS is kept with the corpus, and the origin
// serving it advertises that key. TestFleetTreeIsWhatABuildWrites holds the
// tree to what a real build writes.

// fleetHost is the registry host the fleet's providers live under.
const fleetHost = "registry.opentofu.org"

// generateFleet writes a fleet corpus into dir: the key, the tree and the
// package list (each archive is a file of the tree, and so are the
// SHA256SUMS and signatures the origin serves).
func generateFleet(dir string, c *Corpus) error {
	spec := c.Spec
	sig, err := newSigner()
	if err != nil {
		return err
	}
	c.Key, c.Tree, c.Sigs = "key.asc", "tree", map[string]string{}
	if err := sig.writePrivate(filepath.Join(dir, c.Key)); err != nil {
		return err
	}
	for p := 1; p <= spec.Providers; p++ {
		typ := "p" + strconv.Itoa(p)
		rel := filepath.Join(c.Tree, fleetHost, spec.Namespace, typ)
		for v := range spec.Versions {
			ver := versionName(v)
			for _, platform := range spec.Platforms {
				c.Packages = append(c.Packages, Package{
					Type: typ, Version: ver, Platform: platform,
					File: filepath.Join(rel, zipName(typ, ver, platform)),
				})
			}
			c.Sums[typ+"/"+ver] = filepath.Join(rel, sumsName(typ, ver))
			c.Sigs[typ+"/"+ver] = filepath.Join(rel, sumsName(typ, ver)+".sig")
		}
	}

	// One provider at a time per worker: its releases, then its index.
	per := spec.Versions * len(spec.Platforms)
	if err := onEveryCore(spec.Providers, func(p int) error {
		return writeFleetProvider(dir, spec, sig, c.Packages[p*per:(p+1)*per])
	}); err != nil {
		return err
	}

	cat := layout.Catalog{Signers: map[string][]layout.CatalogSigner{}}
	for p := 1; p <= spec.Providers; p++ {
		name := fleetHost + "/" + spec.Namespace + "/p" + strconv.Itoa(p)
		cat.Providers = append(cat.Providers, name)
		var kept []layout.KeptSigner
		for v := range spec.Versions {
			kept = append(kept, layout.KeptSigner{Version: addrs.MustParseVersion(versionName(v)), KeyID: sig.KeyID, Fingerprint: sig.Fingerprint, Created: sig.Created})
		}
		if s := layout.SignerHistory(kept); len(s) > 0 {
			cat.Signers[name] = s
		}
	}
	slices.Sort(cat.Providers)
	return writeJSON(filepath.Join(dir, c.Tree, layout.CatalogPath), cat)
}

// writeFleetProvider writes the releases of one provider (pkgs: all its
// packages, version by version) and its index.json.
func writeFleetProvider(dir string, spec Spec, sig *signer, pkgs []Package) error {
	pdir := filepath.Join(dir, filepath.Dir(pkgs[0].File))
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	idx := layout.Index{Versions: map[string]struct{}{}}
	for start := 0; start < len(pkgs); start += len(spec.Platforms) {
		release := pkgs[start : start+len(spec.Platforms)]
		typ, ver := release[0].Type, release[0].Version
		doc := layout.VersionDoc{Archives: map[string]layout.ArchiveEntry{}}
		prov := layout.Provenance{
			Archives:    map[string]layout.ProvenanceArchive{},
			KeyID:       sig.KeyID,
			Fingerprint: sig.Fingerprint,
			KeyCreated:  sig.Created,
			SigningKeys: []string{sig.Armored},
		}
		for i := range release {
			p := &release[i]
			path := filepath.Join(dir, p.File)
			if err := writeTinyArchive(path, spec, p); err != nil {
				return err
			}
			h1, err := dirhash.HashZip(path, dirhash.Hash1)
			if err != nil {
				return fmt.Errorf("h1 of %s: %w", path, err)
			}
			zh := hashing.Hash(hashing.SchemeZH + p.SHA256)
			hashes := []hashing.Hash{hashing.Hash(h1), zh}
			slices.Sort(hashes)
			name := filepath.Base(p.File)
			doc.Archives[p.Platform] = layout.ArchiveEntry{Hashes: hashes, URL: name}
			sbomName, err := writeFleetSBOM(dir, spec, sig, p, hashing.Hash(h1), zh)
			if err != nil {
				return err
			}
			prov.Archives[p.Platform] = layout.ProvenanceArchive{Filename: name, H1: hashing.Hash(h1), ZH: zh, Size: p.Size, SBOM: sbomName}
		}
		sums := sumsFiles(release)[typ+"/"+ver]
		signature, err := sig.sign(sums)
		if err != nil {
			return err
		}
		prefix := filepath.Join(pdir, "terraform-provider-"+typ+"_"+ver+"_")
		for name, data := range map[string][]byte{
			prefix + "SHA256SUMS":     sums,
			prefix + "SHA256SUMS.sig": signature,
		} {
			if err := os.WriteFile(name, data, 0o644); err != nil {
				return err
			}
		}
		if err := writeJSON(prefix+"provenance.json", prov); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(pdir, ver+".json"), doc); err != nil {
			return err
		}
		idx.Versions[ver] = struct{}{}
	}
	return writeJSON(filepath.Join(pdir, "index.json"), idx)
}

// writeFleetSBOM writes a package's SBOM as a build writes it: its
// executable is not a Go program, which the SBOM says.
func writeFleetSBOM(dir string, spec Spec, sig *signer, p *Package, h1, zh hashing.Hash) (string, error) {
	pkg, err := fleetPackage(spec, p)
	if err != nil {
		return "", err
	}
	data, err := sbom.Describe(mirror.Description{
		Package:  pkg,
		Filename: filepath.Base(p.File),
		ZH:       zh,
		H1:       h1,
		Program:  hashing.Program{Executable: "terraform-provider-" + p.Type + "_v" + p.Version},
		Origin:   fleetHost,
		KeyID:    sig.KeyID,
	})
	if err != nil {
		return "", err
	}
	name := layout.SBOMName(pkg.Provider, pkg.Version, pkg.Platform)
	if err := os.WriteFile(filepath.Join(dir, filepath.Dir(p.File), name), data, 0o644); err != nil {
		return "", err
	}
	return name, nil
}

// fleetPackage is the package p of the fleet, as the core names it.
func fleetPackage(spec Spec, p *Package) (mirror.Package, error) {
	prov, err := addrs.ParseProvider(fleetHost + "/" + spec.Namespace + "/" + p.Type)
	if err != nil {
		return mirror.Package{}, err
	}
	v, err := addrs.ParseVersion(p.Version)
	if err != nil {
		return mirror.Package{}, err
	}
	plat, err := addrs.ParsePlatform(p.Platform)
	if err != nil {
		return mirror.Package{}, err
	}
	return mirror.Package{Provider: prov, Version: v, Platform: plat}, nil
}

// refreshFleetPage writes the tree's index.html as tfmirror renders it,
// unless the file holds those bytes already. The page is derived from the
// tree, and every build writes it when it differs: a page of an older
// tfmirror would make the first no-op build into a copy of the tree write.
func refreshFleetPage(c *Corpus) error {
	root := filepath.Join(c.Dir, c.Tree)
	tree, err := layout.OpenExisting(root)
	if err != nil {
		return err
	}
	data, err := htmlcatalog.Render(context.Background(), tree, htmlcatalog.Options{})
	if err != nil {
		return fmt.Errorf("render %s: %w", htmlcatalog.Path, err)
	}
	path := filepath.Join(root, htmlcatalog.Path)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeJSON writes v as tfmirror writes its documents.
func writeJSON(path string, v any) error {
	data, err := layout.Encode(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// writeTinyArchive writes a valid provider zip of a few hundred bytes (one
// executable entry naming the package) and records its size and digest.
func writeTinyArchive(path string, spec Spec, p *Package) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, compressionLevel)
	})
	hdr := &zip.FileHeader{Name: "terraform-provider-" + p.Type + "_v" + p.Version, Method: zip.Deflate, Modified: modified}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	body := fmt.Appendf(nil, "#!/bin/false\n# %s/%s %s %s, benchmark fleet (seed %d)\n", spec.Namespace, p.Type, p.Version, p.Platform, spec.Seed)
	if _, err := w.Write(body); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	p.Unpacked = int64(len(body))
	p.Size = int64(buf.Len())
	sum := sha256.Sum256(buf.Bytes())
	p.SHA256 = hex.EncodeToString(sum[:])
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
