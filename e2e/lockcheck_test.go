package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// TestLockCheckAgreesWithInit proves `tfmirror lock --check` against the
// real clients in both directions: for each lock-file variant, every file
// it passes survives `tofu init` (1.12.6, 1.10.10) and `terraform init`
// (1.8.5) through the network mirror byte for byte, and every file it
// flags is rewritten by one of them or makes one fail. The check is made
// for the platform the clients run on; which findings the other platforms
// get is the unit tests' (internal/lockfile, internal/cli). Every flagged
// file lock can write is then fixed with --fix, and every client keeps
// the result byte for byte.
func TestLockCheckAgreesWithInit(t *testing.T) {
	if hostPlatform() != "linux_amd64" {
		t.Skipf("the variants remove linux_amd64 hashes; this host is %s", hostPlatform())
	}
	clients := map[string]string{"tofu-1.12.6": tofuBin(t), "tofu-1.10.10": oldTofuBin(t), "terraform-1.8.5": terraformBin(t)}
	fx := newMonorepoFixture(t)
	dir := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(dir, "main.tf"), lockCheckConfig("~> 1.0"))
	args := append([]string{"build", dir}, platformFlags("--platform")...)
	args = append(args, "--config", "mirror.hcl", "--out", "site", "--write-lock-files")
	if stdout, stderr, code := runTfmirror(t, fx.work, fx.env, args...); code != 0 {
		t.Fatalf("tfmirror build: exit %d\n%s%s", code, stdout, stderr)
	}
	base := startNginx(t, filepath.Join(fx.work, "site"), fx.ca)
	complete := readFile(t, filepath.Join(dir, ".terraform.lock.hcl"))
	written := writtenByClients(t, fx, base, clients)

	fooLinuxH1 := linuxH1(t, fx, base, "registry.opentofu.org/hashicorp/foo")
	const fix, noFix = true, false
	for _, v := range []struct {
		name, tf, lock   string
		flagged, fixable bool
	}{
		{"complete", "~> 1.0", complete, false, noFix},
		{"missing linux h1", "~> 1.0", strings.Replace(complete, "    \""+fooLinuxH1+"\",\n", "", 1), true, fix},
		{"stale provider", "~> 1.0", complete + "\nprovider \"registry.opentofu.org/hashicorp/bar\" {\n  version = \"0.2.0\"\n  hashes = [\n    \"h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\",\n  ]\n}\n", true, fix},
		{"missing provider", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, dropBlock("registry.test/acme/qux")), true, fix},
		{"constraints changed", ">= 1.0", complete, false, noFix},
		{"version no longer allowed", "~> 1.0, < 1.2", complete, true, noFix},
		{"version not in the mirror", "~> 1.0", strings.Replace(complete, `version     = "1.2.0"`, `version     = "1.1.0"`, 1), true, noFix},
		{"hashes not in the mirror", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, forgeHashes("registry.opentofu.org/hashicorp/foo")), true, fix},
		{"a stray hash beside matching ones", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, editHashes("registry.opentofu.org/hashicorp/foo", func(h []string) []string {
			return sorted(append(h, `"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",`))
		})), false, noFix},
		// A hand-merged file: init writes the list back sorted, each once,
		// h1: and zh: only.
		{"hashes out of order", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, editHashes("registry.opentofu.org/hashicorp/foo", func(h []string) []string {
			h[0], h[len(h)-1] = h[len(h)-1], h[0]
			return h
		})), true, fix},
		{"a hash twice", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, editHashes("registry.opentofu.org/hashicorp/foo", func(h []string) []string {
			return append(h[:1], h...)
		})), true, fix},
		{"a hash of an unknown scheme", "~> 1.0", providerBlock.ReplaceAllStringFunc(complete, editHashes("registry.opentofu.org/hashicorp/foo", func(h []string) []string {
			return sorted(append(h, `"h9:whatever",`))
		})), true, fix},
		{"written by tofu init", "~> 1.0", written["tofu-1.12.6"], false, noFix},
		{"written by terraform init", "~> 1.0", written["terraform-1.8.5"], true, fix},
		{"reordered", "~> 1.0", reorder(t, complete), false, noFix},
	} {
		t.Run(strings.ReplaceAll(v.name, " ", "_"), func(t *testing.T) {
			if v.lock == complete && v.name != "complete" && v.tf == "~> 1.0" {
				t.Fatal("the variant did not change the lock file")
			}
			code, root := checkAgainstClients(t, fx, base, clients, lockCheckConfig(v.tf), v.lock)
			if flagged := code == 1; flagged != v.flagged {
				t.Errorf("lock --check flagged it: %v, want %v", flagged, v.flagged)
			}
			if code == 1 {
				checkFix(t, fx, root, base, lockCheckConfig(v.tf), v.lock, v.fixable, clients)
			}
		})
	}
	// A source without a host: OpenTofu reads it on registry.opentofu.org,
	// as the file locks it, Terraform on registry.terraform.io, another
	// provider, which this mirror does not hold. Checked for Terraform by
	// name, lock --check says so, and --fix leaves the file.
	t.Run("source_without_a_host", func(t *testing.T) {
		config := strings.Replace(lockCheckConfig("~> 1.0"), `"registry.opentofu.org/hashicorp/foo"`, `"hashicorp/foo"`, 1)
		code, root := checkAgainstClients(t, fx, base, map[string]string{"terraform-1.8.5": terraformBin(t)}, config, complete, "--client", "terraform")
		if code != 1 {
			t.Errorf("lock --check --client terraform passed a file Terraform cannot keep for a source without a host")
		}
		// The mirror holds no registry.terraform.io/hashicorp/foo: no
		// file Terraform keeps can be written, and --fix leaves this one.
		stdout, stderr, code := runTfmirror(t, fx.work, fx.env, "lock", "--fix", root, "--mirror", base, "--platform", hostPlatform(), "--client", "terraform")
		if code != 1 || readFile(t, filepath.Join(root, ".terraform.lock.hcl")) != complete {
			t.Errorf("lock --fix --client terraform: exit %d, want 1 and the file left\n%s%s", code, stdout, stderr)
		}
		if code, _ := checkAgainstClients(t, fx, base, map[string]string{"tofu-1.12.6": tofuBin(t)}, config, complete, "--client", "tofu"); code != 0 {
			t.Errorf("lock --check --client tofu flagged a file OpenTofu keeps")
		}
	})
}

// checkAgainstClients runs lock --check on a root holding config and lock
// for the host platform, then each client's init on a clean copy: if the
// check passes the file, every client must keep it byte for byte; if it
// flags it, one at least must rewrite it or fail. It returns the check's
// exit code and the root.
func checkAgainstClients(t *testing.T, fx *monorepoFixture, base string, clients map[string]string, config, lock string, flags ...string) (int, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(root, "main.tf"), config)
	writeFile(t, filepath.Join(root, ".terraform.lock.hcl"), lock)
	stdout, stderr, code := runTfmirror(t, fx.work, fx.env, append([]string{"lock", "--check", root, "--mirror", base, "--platform", hostPlatform(), "--json"}, flags...)...)
	if code != 0 && code != 1 {
		t.Fatalf("lock --check: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := readFile(t, filepath.Join(root, ".terraform.lock.hcl")); got != lock {
		t.Fatal("lock --check changed the file")
	}
	changed := false
	for name, bin := range clients {
		outcome := initOutcome(t, fx, bin, base, config, lock)
		t.Logf("%s: %s", name, outcome)
		if code == 0 && outcome != "kept" {
			t.Errorf("lock --check passed the file, but %s init %s it", name, outcome)
		}
		changed = changed || outcome != "kept"
	}
	if code == 1 && !changed {
		t.Errorf("lock --check flagged the file, but every client's init kept it byte for byte:\n%s", findingLines(stdout))
	}
	return code, root
}

// checkFix runs lock --fix on the flagged root: a file lock can write is
// written, and every client's init then keeps it; any other is left as
// it is, and --fix exits 1.
func checkFix(t *testing.T, fx *monorepoFixture, root, base, config, lock string, fixable bool, clients map[string]string) {
	t.Helper()
	stdout, stderr, code := runTfmirror(t, fx.work, fx.env, "lock", "--fix", root, "--mirror", base, "--platform", hostPlatform(), "--json")
	fixed := readFile(t, filepath.Join(root, ".terraform.lock.hcl"))
	if !fixable {
		if code != 1 || fixed != lock {
			t.Errorf("lock --fix on a file lock cannot write: exit %d, want 1 and the file left\n%s%s", code, stdout, stderr)
		}
		return
	}
	if code != 0 || fixed == lock {
		t.Fatalf("lock --fix: exit %d, want 0 and the file rewritten\n%s%s", code, stdout, stderr)
	}
	for name, bin := range clients {
		if outcome := initOutcome(t, fx, bin, base, config, fixed); outcome != "kept" {
			t.Errorf("%s init %s the file lock --fix wrote", name, outcome)
		}
	}
}

// A provider whose zips hold directory entries has two h1: hashes per
// package: the zip's, which the mirror lists, and the unpacked
// directory's. OpenTofu records both when it installs from the mirror, so
// lock records both, and its file survives every client's init.
func TestLockCheckZipWithDirectoryEntries(t *testing.T) {
	if hostPlatform() != "linux_amd64" {
		t.Skipf("the mirror holds linux_amd64 and darwin_arm64; this host is %s", hostPlatform())
	}
	clients := map[string]string{"tofu-1.12.6": tofuBin(t), "tofu-1.10.10": oldTofuBin(t), "terraform-1.8.5": terraformBin(t)}
	fx := newMonorepoFixture(t)
	fx.reg.AddWithOptions("acme", "docs", "1.0.0", fakeregistry.Options{DirEntries: true}, lockPlatforms...)
	config := `terraform {
  required_providers {
    docs = {
      source  = "registry.test/acme/docs"
      version = "1.0.0"
    }
  }
}
`
	buildAndCheckLock(t, fx, clients, config)
}

// buildAndCheckLock builds the fixture's mirror for config with its lock
// file written, serves it with nginx, and requires lock --check and every
// client's init to keep that lock file.
func buildAndCheckLock(t *testing.T, fx *monorepoFixture, clients map[string]string, config string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(dir, "main.tf"), config)
	args := append([]string{"build", dir}, platformFlags("--platform")...)
	args = append(args, "--config", "mirror.hcl", "--out", "site", "--write-lock-files")
	if stdout, stderr, code := runTfmirror(t, fx.work, fx.env, args...); code != 0 {
		t.Fatalf("tfmirror build: exit %d\n%s%s", code, stdout, stderr)
	}
	base := startNginx(t, filepath.Join(fx.work, "site"), fx.ca)
	lock := readFile(t, filepath.Join(dir, ".terraform.lock.hcl"))
	if code, _ := checkAgainstClients(t, fx, base, clients, config, lock); code != 0 {
		t.Errorf("lock --check flags the file lock wrote: exit %d, want 0", code)
	}
}

// lockCheckConfig is a root both clients read: every provider names its
// registry host, foo with the given constraints.
func lockCheckConfig(foo string) string {
	return `terraform {
  required_providers {
    foo = {
      source  = "registry.opentofu.org/hashicorp/foo"
      version = "` + foo + `"
    }
    qux = {
      source  = "registry.test/acme/qux"
      version = ">= 1.0.0"
    }
  }
}
`
}

// initOutcome runs the client's init from a clean directory holding the
// configuration and lock file, installing only from the network mirror,
// and says what became of the file: "kept", "rewrote" or "failed on".
func initOutcome(t *testing.T, fx *monorepoFixture, bin, base, config, lock string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(root, "main.tf"), config)
	writeFile(t, filepath.Join(root, ".terraform.lock.hcl"), lock)
	if _, err := runTofu(t, bin, root, mirrorOnlyCLI(base), fx.env, "init", "-input=false"); err != nil {
		return "failed on"
	}
	if readFile(t, filepath.Join(root, ".terraform.lock.hcl")) != lock {
		return "rewrote"
	}
	return "kept"
}

// writtenByClients is the lock file each client writes on a plain init
// through the network mirror, with no lock file before.
func writtenByClients(t *testing.T, fx *monorepoFixture, base string, clients map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, bin := range clients {
		root := filepath.Join(t.TempDir(), "tf")
		writeFile(t, filepath.Join(root, "main.tf"), lockCheckConfig("~> 1.0"))
		if msg, err := runTofu(t, bin, root, mirrorOnlyCLI(base), fx.env, "init", "-input=false"); err != nil {
			t.Fatalf("%s init: %v\n%s", name, err, msg)
		}
		out[name] = readFile(t, filepath.Join(root, ".terraform.lock.hcl"))
	}
	return out
}

// linuxH1 is the h1: tfmirror lock records for provider's linux_amd64
// package.
func linuxH1(t *testing.T, fx *monorepoFixture, base, provider string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(root, "main.tf"), lockCheckConfig("~> 1.0"))
	if stdout, stderr, code := runTfmirror(t, fx.work, fx.env, "lock", root, "--mirror", base, "--platform", "linux_amd64"); code != 0 {
		t.Fatalf("tfmirror lock: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, block := range providerBlock.FindAllString(readFile(t, filepath.Join(root, ".terraform.lock.hcl")), -1) {
		if strings.Contains(block, `"`+provider+`"`) {
			if h := regexp.MustCompile(`h1:[^"]+`).FindString(block); h != "" {
				return h
			}
		}
	}
	t.Fatalf("no h1: for %s", provider)
	return ""
}

// providerBlock matches one provider block of a lock file, with the blank
// line before it.
var providerBlock = regexp.MustCompile(`(?s)\nprovider "[^"]+" \{\n.*?\n\}\n`)

// dropBlock removes provider's block.
func dropBlock(provider string) func(string) string {
	return func(block string) string {
		if strings.Contains(block, `"`+provider+`"`) {
			return ""
		}
		return block
	}
}

// forgeHashes replaces provider's hashes by well-formed ones of nothing
// the mirror holds, as a lock file written against another registry has.
func forgeHashes(provider string) func(string) string {
	return func(block string) string {
		if !strings.Contains(block, `"`+provider+`"`) {
			return block
		}
		start, end := strings.Index(block, "  hashes = ["), strings.LastIndex(block, "  ]\n")
		return block[:start] + "  hashes = [\n    \"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\n    \"zh:" + strings.Repeat("0", 64) + "\",\n" + block[end:]
	}
}

// editHashes rewrites the hash lines of provider's block (each
// `"scheme:value",`) with edit.
func editHashes(provider string, edit func([]string) []string) func(string) string {
	return func(block string) string {
		if !strings.Contains(block, `"`+provider+`"`) {
			return block
		}
		start, end := strings.Index(block, "  hashes = [\n"), strings.LastIndex(block, "  ]\n")
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(block[start+len("  hashes = [\n"):end]), "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		var b strings.Builder
		for _, l := range edit(lines) {
			b.WriteString("    " + l + "\n")
		}
		return block[:start] + "  hashes = [\n" + b.String() + block[end:]
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// reorder puts the provider blocks in reverse order and the attributes
// of each in another, without aligning them: the same locks, not in the
// form init writes.
func reorder(t *testing.T, lock string) string {
	t.Helper()
	blocks := providerBlock.FindAllString(lock, -1)
	if len(blocks) < 2 {
		t.Fatalf("want two provider blocks:\n%s", lock)
	}
	head := lock[:strings.Index(lock, blocks[0])]
	out := head
	for i := len(blocks) - 1; i >= 0; i-- {
		b := regexp.MustCompile(`\n  version\s+= ("[^"]+")\n  constraints = ("[^"]+")\n`).ReplaceAllString(blocks[i], "\n  constraints = $2\n  version = $1\n")
		out += b
	}
	if out == lock {
		t.Fatal("reorder changed nothing")
	}
	return out
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// findingLines are the messages of a --json check's findings.
func findingLines(stdout string) string {
	var lines []string
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct{ Event, Message string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "lock_finding" {
			lines = append(lines, ev.Message)
		}
	}
	return strings.Join(lines, "\n")
}

// OpenTofu shims a lock of registry.terraform.io/hashicorp/X with a
// registry.opentofu.org/hashicorp/X lock (UpgradeFromPredecessorProject)
// before it installs, and drops the shim again when the configuration
// names registry.terraform.io: a plain init keeps the file byte for byte
// (only -lockfile=readonly refuses it), so the check passes it.
func TestLockCheckPredecessorRegistry(t *testing.T) {
	if hostPlatform() != "linux_amd64" {
		t.Skipf("the mirror holds linux_amd64 and darwin_arm64; this host is %s", hostPlatform())
	}
	clients := map[string]string{"tofu-1.12.6": tofuBin(t), "tofu-1.10.10": oldTofuBin(t), "terraform-1.8.5": terraformBin(t)}
	fx := newMonorepoFixture(t)
	manifest := filepath.Join(fx.work, "mirror.hcl")
	writeFile(t, manifest, readFile(t, manifest)+"\nhost \"registry.terraform.io\" {\n  services = { \"providers.v1\" = \""+fx.reg.ServicesURL+"\" }\n}\n")
	config := `terraform {
  required_providers {
    foo = {
      source  = "registry.terraform.io/hashicorp/foo"
      version = "~> 1.0"
    }
  }
}
`
	buildAndCheckLock(t, fx, clients, config)
}
