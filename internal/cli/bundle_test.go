package cli

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/layout"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// existingMirror builds a mirror that shares a provider with builtSite's
// but not its contents: foo 0.9.0 and foo 1.0.0 for linux_amd64 only, and
// bar 2.0.0. Importing builtSite's bundle into it merges index.json,
// 1.0.0.json, the provenance record and catalog.json.
func existingMirror(t *testing.T, o origin) string {
	t.Helper()
	o.reg.Add("hashicorp", "foo", "0.9.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "2.0.0", "linux_amd64")
	return siteOf(t, o, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = ">= 0.9.0, <= 1.0.0" }
provider "hashicorp/bar" { versions = "2.0.0" }
`+o.hostBlock("registry.opentofu.org"))
}

// snapshot returns every file (with its content) and directory under
// dir, or nil if dir does not exist.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			out[rel+"/"] = ""
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(data)
		default:
			out[rel] = "special " + d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// publishedFiles is snapshot without directories and the private area.
// publishedFiles are the published files of a mirror directory, with
// their content, leaving out its change records (withoutChanges): what
// two mirrors of the same packages, built by different runs, share.
func publishedFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	return withoutChanges(allPublishedFiles(t, dir))
}

// allPublishedFiles are all the published files of a mirror directory,
// with their content.
func allPublishedFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, content := range snapshot(t, dir) {
		if !strings.HasSuffix(rel, "/") && !strings.HasPrefix(filepath.ToSlash(rel), ".tfmirror/") {
			out[filepath.ToSlash(rel)] = content
		}
	}
	return out
}

func diffSnapshots(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok {
			t.Errorf("%s disappeared", k)
		} else if v != w {
			t.Errorf("%s changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

func mustRun(t *testing.T, o origin, dir string, args ...string) string {
	t.Helper()
	code, stdout, stderr := o.run(t, dir, args...)
	if code != ExitOK {
		t.Fatalf("tfmirror %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

func verifyClean(t *testing.T, o origin, dir string) {
	t.Helper()
	if out := mustRun(t, o, t.TempDir(), "verify", dir); !strings.Contains(out, " 0 problems, 0 warnings") {
		t.Errorf("verify %s:\n%s", dir, out)
	}
}

const fooDir = "registry.opentofu.org/hashicorp/foo/"

func TestBundleRoundTrip(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	writeAppLock(t, work)
	first := filepath.Join(work, "first.tar.gz")
	out := mustRun(t, o, work, "bundle", "create", site, "--out", first, "--lock-files", "live/app")
	if !strings.Contains(out, "bundled 1 provider, 1 version, 2 archives") {
		t.Errorf("create output:\n%s", out)
	}
	if strings.Contains(out, "skipped") {
		t.Errorf("create skipped a file of a mirror that holds only tfmirror's (its own catalog page is not one to report):\n%s", out)
	}
	second := filepath.Join(work, "second.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", second, "--lock-files", "live/app")
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two bundles of the same tree differ (%d and %d bytes)", len(a), len(b))
	}
	names := entryNames(targz.Read(t, first))
	if names[0] != "manifest.json" || !contains(names, "lock-files/live/app/.terraform.lock.hcl") ||
		!contains(names, "cli-config/tofu-network-mirror.tfrc") || !contains(names, "mirror/"+fooDir+"index.json") {
		t.Errorf("bundle entries: %v", names)
	}
	source := publishedFiles(t, site)

	t.Run("into a new directory", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "new", "mirror")
		extras := filepath.Join(t.TempDir(), "extras")
		out := mustRun(t, o, work, "bundle", "import", first, "--out", dest, "--extras", extras)
		if !strings.Contains(out, "imported 1 provider, 1 version, 2 archives") {
			t.Errorf("import output:\n%s", out)
		}
		verifyClean(t, o, dest)
		got := publishedFiles(t, dest)
		diffSnapshots(t, source, got)
		if data, err := os.ReadFile(filepath.Join(extras, "lock-files", "live", "app", ".terraform.lock.hcl")); err != nil || string(data) != appLock {
			t.Errorf("extras lock file: %q, %v", data, err)
		}
		if data, err := os.ReadFile(filepath.Join(extras, "cli-config", "tofu-filesystem-mirror.tfrc")); err != nil || !strings.Contains(string(data), "filesystem_mirror") {
			t.Errorf("extras CLI config: %q, %v", data, err)
		}
		leftovers, _ := filepath.Glob(filepath.Join(dest, ".tfmirror", "import-*"))
		if len(leftovers) > 0 {
			t.Errorf("staging left behind: %v", leftovers)
		}
		again := mustRun(t, o, work, "bundle", "import", first, "--out", dest)
		if !strings.Contains(again, "0 files of the bundle written") {
			t.Errorf("importing the same bundle again wrote files:\n%s", again)
		}
		file := filepath.Join(t.TempDir(), "extras.txt")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := o.run(t, work, "bundle", "import", first, "--out", filepath.Join(t.TempDir(), "m"), "--extras", file)
		if code != ExitUsage || !strings.Contains(stderr, "--extras "+file+" is a file, not a directory") || strings.Contains(stdout, "imported") {
			t.Errorf("--extras naming a file: exit %d, want %d before any import\n%s%s", code, ExitUsage, stdout, stderr)
		}
		inMirror := filepath.Join(t.TempDir(), "m")
		code, stdout, stderr = o.run(t, work, "bundle", "import", first, "--out", inMirror, "--extras", filepath.Join(inMirror, "extras"))
		if code != ExitUsage || !strings.Contains(stderr, "is inside the mirror") {
			t.Errorf("--extras inside --out: exit %d, want %d before any import\n%s%s", code, ExitUsage, stdout, stderr)
		}
		if _, err := os.Stat(inMirror); !os.IsNotExist(err) {
			t.Errorf("--extras inside --out: the mirror was written (%v)", err)
		}
	})

	t.Run("into an existing mirror", func(t *testing.T) {
		dest := existingMirror(t, o)
		before := publishedFiles(t, dest)
		mustRun(t, o, work, "bundle", "import", first, "--out", dest)
		verifyClean(t, o, dest)
		after := publishedFiles(t, dest)
		for rel, content := range source {
			switch rel {
			case "catalog.json", fooDir + "index.json", "index.html": // they list what the tree holds
				continue
			}
			if after[rel] != content {
				t.Errorf("%s differs from the source mirror", rel)
			}
		}
		for rel, content := range before {
			if strings.HasPrefix(rel, "registry.opentofu.org/hashicorp/bar/") || strings.Contains(rel, "0.9.0") {
				if after[rel] != content {
					t.Errorf("%s changed", rel)
				}
			}
		}
		if want := "{\n  \"versions\": {\n    \"0.9.0\": {},\n    \"1.0.0\": {}\n  }\n}"; after[fooDir+"index.json"] != want {
			t.Errorf("merged index.json:\n%s", after[fooDir+"index.json"])
		}
		merged, err := layout.DecodeCatalog([]byte(after["catalog.json"]))
		if err != nil || !slices.Equal(merged.Providers, []string{"registry.opentofu.org/hashicorp/bar", "registry.opentofu.org/hashicorp/foo"}) ||
			merged.Signers["registry.opentofu.org/hashicorp/foo"][0].Releases != 2 || len(merged.Signers["registry.opentofu.org/hashicorp/bar"]) != 1 {
			t.Errorf("merged catalog.json (%v): want both providers, and foo's two releases signed by one key:\n%s", err, after["catalog.json"])
		}
	})
}

func TestBundleSigned(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	priv, pub, keyID := writeKeyPair(t, work, "operator")
	file := filepath.Join(work, "b.tar.gz")
	if out := mustRun(t, o, work, "bundle", "create", site, "--out", file, "--sign-key", priv); !strings.Contains(out, "signed by "+keyID) {
		t.Errorf("create output:\n%s", out)
	}
	if names := entryNames(targz.Read(t, file)); names[1] != "manifest.json.sig" {
		t.Errorf("second entry is %s", names[1])
	}
	dest := filepath.Join(t.TempDir(), "mirror")
	code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", dest, "--trust-key", pub, "--json")
	var res struct {
		KeyID    string `json:"key_id"`
		Written  int    `json:"written"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(summaryLine(t, stdout), &res); err != nil || code != ExitOK || res.KeyID != keyID || res.Written == 0 {
		t.Fatalf("import: exit %d, %+v (%v)\n%s%s", code, res, err, stdout, stderr)
	}
	verifyClean(t, o, dest)

	// Without --trust-key, a signed bundle imports with a warning.
	if out := mustRun(t, o, work, "bundle", "import", file, "--out", t.TempDir()); !strings.Contains(out, "signature was not checked") {
		t.Errorf("no warning about the unchecked signature:\n%s", out)
	}
}

// TestBundleImportRefusesTampered: each damaged or hostile bundle exits 3
// and leaves the destination exactly as it was, with no staging left.
func TestBundleImportRefusesTampered(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	priv, pub, _ := writeKeyPair(t, work, "operator")
	otherPriv, _, _ := writeKeyPair(t, work, "intruder")
	good := filepath.Join(work, "good.tar.gz")
	signed := filepath.Join(work, "signed.tar.gz")
	bySomeoneElse := filepath.Join(work, "other.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", good)
	mustRun(t, o, work, "bundle", "create", site, "--out", signed, "--sign-key", priv)
	mustRun(t, o, work, "bundle", "create", site, "--out", bySomeoneElse, "--sign-key", otherPriv)
	existing := existingMirror(t, o)

	find := func(entries []tarEntry, suffix string) int {
		for i, e := range entries {
			if strings.HasSuffix(e.Header.Name, suffix) {
				return i
			}
		}
		t.Fatalf("no entry ends with %s", suffix)
		return -1
	}
	cases := []struct {
		name   string
		from   string
		trust  bool
		mutate func([]tarEntry) []tarEntry
		want   string // in the output
	}{
		{"flipped byte in an archive", good, false, func(es []tarEntry) []tarEntry {
			i := find(es, "_linux_amd64.zip")
			es[i].Data[len(es[i].Data)/2] ^= 1
			return es
		}, "SHA-256 is"},
		{"flipped byte in the manifest", good, false, func(es []tarEntry) []tarEntry {
			es[0].Data[len(es[0].Data)/2] ^= 1
			return es
		}, ""},
		{"file added", good, false, func(es []tarEntry) []tarEntry {
			return append(es, targz.Regular("mirror/"+fooDir+"extra.zip", "not listed"))
		}, "not listed in the manifest"},
		{"listed file removed", good, false, func(es []tarEntry) []tarEntry {
			i := find(es, "_SHA256SUMS")
			return append(es[:i], es[i+1:]...)
		}, "not in the bundle"},
		{"path traversal", good, false, func(es []tarEntry) []tarEntry {
			return append(es, targz.Regular("../evil", "owned"))
		}, "path traversal"},
		{"path traversal inside", good, false, func(es []tarEntry) []tarEntry {
			return append(es, targz.Regular("mirror/../../evil", "owned"))
		}, "path traversal"},
		{"absolute path", good, false, func(es []tarEntry) []tarEntry {
			return append(es, targz.Regular("/tmp/evil", "owned"))
		}, "absolute path"},
		{"symlink", good, false, func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "mirror/" + fooDir + "link", Linkname: "/etc/passwd"}})
		}, "symbolic link"},
		{"hard link", good, false, func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{Header: tar.Header{Typeflag: tar.TypeLink, Name: "mirror/" + fooDir + "link", Linkname: "mirror/catalog.json"}})
		}, "hard link"},
		{"signature missing", good, true, nil, "manifest.json.sig: missing"},
		{"signature by another key", bySomeoneElse, true, nil, "does not verify"},
		{"signature damaged", signed, true, func(es []tarEntry) []tarEntry {
			es[1].Data[len(es[1].Data)-3] ^= 1
			return es
		}, "does not verify"},
		{"signed manifest changed", signed, true, func(es []tarEntry) []tarEntry {
			i := find(es, "_darwin_arm64.zip")
			es[i].Data[0] ^= 1
			es[0].Data = bytes.Replace(es[0].Data, []byte(sha256Hex(flip(es[i].Data, 0))), []byte(sha256Hex(es[i].Data)), 1)
			return es
		}, "does not verify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.from
			if tc.mutate != nil {
				file = filepath.Join(t.TempDir(), "tampered.tar.gz")
				targz.Write(t, file, tc.mutate(targz.Read(t, tc.from)))
			}
			args := []string{"bundle", "import", file}
			if tc.trust {
				args = append(args, "--trust-key", pub)
			}
			for _, dest := range []string{existing, filepath.Join(t.TempDir(), "new")} {
				before := snapshot(t, dest)
				code, stdout, stderr := o.run(t, work, append(args, "--out", dest)...)
				if code != ExitVerification {
					t.Errorf("exit %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
				}
				if !strings.Contains(stdout+stderr, tc.want) || !strings.Contains(stderr, "nothing was written") {
					t.Errorf("output lacks %q:\n%s%s", tc.want, stdout, stderr)
				}
				diffSnapshots(t, before, snapshot(t, dest))
			}
		})
	}
	verifyClean(t, o, existing)
}

func TestBundleImportRefusesConflictingArchive(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	file := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)
	dest := existingMirror(t, o)
	archive := filepath.Join(dest, filepath.FromSlash(fooDir), "terraform-provider-foo_1.0.0_linux_amd64.zip")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive, flip(data, len(data)/2), 0o644); err != nil {
		t.Fatal(err)
	}
	before := publishedFiles(t, dest)
	code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", dest)
	if code != ExitVerification || !strings.Contains(stdout, "problem  "+fooDir+"terraform-provider-foo_1.0.0_linux_amd64.zip: the destination already holds different bytes") {
		t.Errorf("exit %d, want %d naming the archive\n%s%s", code, ExitVerification, stdout, stderr)
	}
	diffSnapshots(t, before, publishedFiles(t, dest))
}

func TestBundleUsageAndBrokenMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	file := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)
	_, pubOnly, _ := writeKeyPair(t, work, "public")
	protected := writeProtectedKey(t, work)
	for _, args := range [][]string{
		{"bundle"},
		{"bundle", "create", site, "--out", "x.tar.gz", "--sign-key", pubOnly},
		{"bundle", "create", site, "--out", "x.tar.gz", "--sign-key", protected},
		{"bundle", "create", site},
		{"bundle", "create", filepath.Join(work, "missing"), "--out", "x.tar.gz"},
		{"bundle", "create", work, "--out", "x.tar.gz"}, // not a mirror
		{"bundle", "create", site, "--out", "x.tar.gz", "--lock-files", work},
		{"bundle", "create", site, "--out", "x.tar.gz", "--sign-key", file},
		{"bundle", "import", file},
		{"bundle", "import", filepath.Join(work, "missing.tar.gz"), "--out", "dest"},
		{"bundle", "import", file, "--out", "dest", "--layout", "bogus"},
		{"bundle", "import", file, "--out", "dest", "--trust-key", file},
	} {
		code, stdout, stderr := o.run(t, work, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, ExitUsage, stdout, stderr)
		}
	}
	for key, want := range map[string]string{pubOnly: "holds no private key", protected: "protected by a passphrase"} {
		if _, stderr := runCode(t, o, work, "bundle", "create", site, "--out", "x.tar.gz", "--sign-key", key); !strings.Contains(stderr, want) {
			t.Errorf("--sign-key %s: %s", filepath.Base(key), stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "dest")); !os.IsNotExist(err) {
		t.Errorf("a refused command created the destination: %v", err)
	}

	// A mirror with a damaged archive is not bundled.
	archive := filepath.Join(site, filepath.FromSlash(fooDir), "terraform-provider-foo_1.0.0_darwin_arm64.zip")
	data, _ := os.ReadFile(archive)
	if err := os.WriteFile(archive, flip(data, len(data)/2), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "broken.tar.gz")
	if code, stderr := runCode(t, o, work, "bundle", "create", site, "--out", out); code != ExitVerification || !strings.Contains(stderr, "no bundle was written") {
		t.Errorf("create from a damaged mirror: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a bundle was written: %v", err)
	}
}

func runCode(t *testing.T, o origin, dir string, args ...string) (int, string) {
	t.Helper()
	code, _, stderr := o.run(t, dir, args...)
	return code, stderr
}

// tarEntry is one entry of a bundle, for tests that rewrite bundles.
type tarEntry = targz.Entry

func entryNames(entries []tarEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Header.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func flip(data []byte, i int) []byte {
	out := bytes.Clone(data)
	out[i] ^= 1
	return out
}

func sha256Hex(b []byte) string { return strings.TrimPrefix(zh(b), "zh:") }

// writeKeyPair writes an ASCII-armored private key and its public key
// into dir and returns their paths and the key ID.
func writeKeyPair(t *testing.T, dir, name string) (string, string, string) {
	t.Helper()
	k := pgptest.New(t, name)
	priv, pub := k.WriteFiles(t, dir, name)
	return priv, pub, k.ID
}

// writeProtectedKey writes an ASCII-armored private key protected by a
// passphrase, which tfmirror refuses to use.
func writeProtectedKey(t *testing.T, dir string) string {
	t.Helper()
	e, err := openpgp.NewEntity("protected", "", "protected@example.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte("secret"), nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "protected.key.asc")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBundleImportIntoFilesystemLayouts(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	file := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)
	for _, kind := range []string{"packed", "unpacked"} {
		t.Run(kind, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), kind)
			mustRun(t, o, work, "bundle", "import", file, "--out", dest, "--layout", kind)
			want := filepath.Join(dest, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_linux_amd64.zip")
			if kind == "unpacked" {
				want = filepath.Join(dest, "registry.opentofu.org", "hashicorp", "foo", "1.0.0", "linux_amd64", "terraform-provider-foo_v1.0.0")
			}
			if _, err := os.Stat(want); err != nil {
				t.Errorf("the %s mirror lacks %s: %v", kind, want, err)
			}
			mustRun(t, o, work, "verify", filepath.Join(dest, ".tfmirror", "store"))
			mustRun(t, o, work, "verify", dest)
			checkFilesystemDamage(t, o, work, dest, want)
			// A network mirror cannot be imported into as a filesystem one.
			if code, _, stderr := o.run(t, work, "bundle", "import", file, "--out", site, "--layout", kind); code != ExitUsage || !strings.Contains(stderr, "is a network mirror") {
				t.Errorf("import --layout %s into a network mirror: exit %d\n%s", kind, code, stderr)
			}
		})
	}
}

// checkFilesystemDamage damages what clients of the filesystem mirror at
// dest read, file (a packed archive, or a file of an unpacked package),
// and expects verify to name it, exit 3; and the same once the package is
// gone altogether.
func checkFilesystemDamage(t *testing.T, o origin, work, dest, file string) {
	t.Helper()
	rel, err := filepath.Rel(dest, file)
	if err != nil {
		t.Fatal(err)
	}
	shown := filepath.ToSlash(rel)
	if strings.Contains(shown, "/1.0.0/") {
		shown = shown[:strings.Index(shown, "/1.0.0/")+len("/1.0.0/linux_amd64")]
	}
	original, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	damaged := slices.Clone(original)
	damaged[len(damaged)/2] ^= 0xff
	// A new file in its place: a packed archive is a hard link to the
	// store's, which must stay intact.
	if err := os.WriteFile(file+".new", damaged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := o.run(t, work, "verify", dest); code != ExitVerification || !strings.Contains(stdout+stderr, shown) || !strings.Contains(stdout+stderr, "clients refuse it") {
		t.Errorf("verify of a filesystem mirror with %s damaged: exit %d, want %d naming %s\n%s%s", shown, code, ExitVerification, shown, stdout, stderr)
	}
	if err := os.RemoveAll(filepath.Join(dest, filepath.FromSlash(shown))); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := o.run(t, work, "verify", dest); code != ExitVerification || !strings.Contains(stdout+stderr, "find no package of registry.opentofu.org/hashicorp/foo 1.0.0 for linux_amd64") {
		t.Errorf("verify of a filesystem mirror without %s: exit %d, want %d saying clients find no package\n%s%s", shown, code, ExitVerification, stdout, stderr)
	}
}

func TestBundleCreateRefusesAnOutInsideTheMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	link := filepath.Join(work, "link")
	if err := os.Symlink(site, link); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, site)
	for _, out := range []string{
		filepath.Join(site, filepath.FromSlash(fooDir), "index.json"), // a file the mirror publishes
		filepath.Join(site, "mirror.tar.gz"),
		filepath.Join(site, "new", "mirror.tar.gz"),
		filepath.Join(link, "mirror.tar.gz"), // through a link to the tree
		site,
	} {
		code, stdout, stderr := o.run(t, work, "bundle", "create", site, "--out", out)
		if code != ExitUsage || !strings.Contains(stderr, "inside the mirror") {
			t.Errorf("--out %s: exit %d, want %d naming the mirror it is inside\n%s%s", out, code, ExitUsage, stdout, stderr)
		}
	}
	diffSnapshots(t, before, snapshot(t, site))
}

// withListedFile adds a file to a bundle's entries and to its manifest, in
// the manifest's canonical form, as a bundle maker would.
func withListedFile(t *testing.T, es []tarEntry, name, content string) []tarEntry {
	t.Helper()
	var m bundle.Manifest
	if err := json.Unmarshal(es[0].Data, &m); err != nil {
		t.Fatal(err)
	}
	m.Files = append(m.Files, bundle.File{Path: name, SHA256: sha256Hex([]byte(content)), Size: int64(len(content))})
	slices.SortFunc(m.Files, func(a, b bundle.File) int { return strings.Compare(a.Path, b.Path) })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	es[0].Data = append(data, '\n')
	return append(es, targz.Regular(name, content))
}

func TestBundleImportExtras(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	writeAppLock(t, work)
	good := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", good, "--lock-files", "live/app")
	out := mustRun(t, o, work, "bundle", "import", good, "--out", filepath.Join(work, "imported"), "--extras", filepath.Join(work, "extras"))
	if !strings.Contains(out, "wrote 1 lock file and 4 CLI configuration snippets into ") {
		t.Errorf("import output miscounts the extras:\n%s", out)
	}

	for name, content := range map[string]string{
		"cli-config/evil.sh":                       "#!/bin/sh\nrm -rf ~\n",
		"cli-config/tofu-network-mirror.tfrc":      "credentials \"app.terraform.io\" {\n  token = \"x\"\n}\n",
		"cli-config/terraform-network-mirror.tfrc": "plugin_cache_dir = \"/tmp\"\n",
	} {
		file := filepath.Join(t.TempDir(), "tampered.tar.gz")
		es := targz.Read(t, good)
		if strings.HasSuffix(name, ".tfrc") { // replace the snippet bundle create wrote
			es = slices.DeleteFunc(es, func(e tarEntry) bool { return e.Header.Name == name })
			var m bundle.Manifest
			if err := json.Unmarshal(es[0].Data, &m); err != nil {
				t.Fatal(err)
			}
			m.Files = slices.DeleteFunc(m.Files, func(f bundle.File) bool { return f.Path == name })
			data, _ := json.MarshalIndent(m, "", "  ")
			es[0].Data = append(data, '\n')
		}
		targz.Write(t, file, withListedFile(t, es, name, content))
		dest, extras := filepath.Join(t.TempDir(), "new"), filepath.Join(t.TempDir(), "extras")
		code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", dest, "--extras", extras)
		if code != ExitVerification || !strings.Contains(stdout+stderr, name) {
			t.Errorf("%s: exit %d, want %d naming it\n%s%s", name, code, ExitVerification, stdout, stderr)
		}
		if _, err := os.Stat(extras); !os.IsNotExist(err) {
			t.Errorf("%s: extras were written: %v", name, err)
		}
	}

	code, _, stderr := o.run(t, work, "bundle", "import", filepath.Join(work, "missing.tar.gz"), "--out", filepath.Join(work, "x"))
	if code != ExitUsage || !strings.Contains(stderr, "missing.tar.gz: no such bundle file") {
		t.Errorf("a missing bundle file: exit %d\n%s", code, stderr)
	}
}

// writeAppLock writes a lock file into work/live/app, for bundles that
// carry lock files (--lock-files live/app).
func writeAppLock(t *testing.T, work string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(work, "live", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "live", "app", ".terraform.lock.hcl"), []byte(appLock), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appLock is the lock file writeAppLock writes.
const appLock = "# This file is maintained automatically by \"tofu init\".\n"

// A mirror with a registry replica bundles without reporting the
// replica's files as skipped: the import writes it anew.
func TestBundleOfAMirrorWithAReplicaSkipsNothing(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	mustRun(t, o, dir, "build", "--registry-replica")
	out := mustRun(t, o, dir, "bundle", "create", "site", "--out", filepath.Join(t.TempDir(), "b.tar.gz"))
	if strings.Contains(out, "skipped") {
		t.Errorf("bundle create reported the replica's files as skipped:\n%s", out)
	}
}
