package mirror

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {Index: 1, Count: 1}, "1/4": {Index: 1, Count: 4}, "4/4": {Index: 4, Count: 4}, "12/16": {Index: 12, Count: 16}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1", "0/4", "5/4", "-1/4", "1/0", "1/-2", "a/b", "1/4/2", " 1/4", "1/ 4", "1.5/4"} {
		if got, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q) = %v; want an error", in, got)
		} else if !strings.Contains(err.Error(), "shard") {
			t.Errorf("ParseShard(%q): %v; the error does not say it is about the shard", in, err)
		}
	}
}

// Every package belongs to exactly one shard of any count.
func TestShardsPartitionPackages(t *testing.T) {
	var pkgs [][3]string
	for _, p := range []string{"hashicorp/aws", "hashicorp/google", "example.com/acme/bar"} {
		for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1", "5.80.0"} {
			for _, plat := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
				pkgs = append(pkgs, [3]string{p, v, plat})
			}
		}
	}
	for n := 1; n <= 7; n++ {
		counts := make([]int, n)
		for _, pkg := range pkgs {
			p, v, plat := addrs.MustParseProvider(pkg[0]), addrs.MustParseVersion(pkg[1]), mustPlatforms(pkg[2])[0]
			owners := 0
			for k := 1; k <= n; k++ {
				if (Shard{Index: k, Count: n}).Owns(p, v, plat) {
					owners++
					counts[k-1]++
				}
			}
			if owners != 1 {
				t.Fatalf("%v in %d shards of %d; want exactly one", pkg, owners, n)
			}
		}
		t.Logf("%d shards: %v packages each", n, counts)
	}
}

// Shards built one after another into one tree give, byte for byte, the
// tree of one build of the whole plan.
func TestShardsBuildTheWholeTree(t *testing.T) {
	fill := func(h *harness) []Requirement {
		for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
			h.src.add("hashicorp/foo", v, "linux_amd64", "darwin_arm64", "windows_amd64")
		}
		h.src.add("example.com/acme/bar", "0.1.0", "linux_amd64", "linux_arm64")
		return []Requirement{
			requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64", "windows_amd64"),
			requirement(t, "example.com/acme/bar", "", "linux_amd64", "linux_arm64"),
		}
	}
	tree := func(h *harness) map[string][sha256.Size]byte {
		out := map[string][sha256.Size]byte{}
		for path, sum := range h.snapshot(t) {
			out[strings.TrimPrefix(path, h.root)] = sum
		}
		return out
	}
	whole := newHarness(t)
	reqs := fill(whole)
	if err := whole.build(t, Options{}, reqs...).Err(); err != nil {
		t.Fatal(err)
	}
	sharded := newHarness(t)
	reqs = fill(sharded)
	const n = 3
	mirrored := 0
	for k := 1; k <= n; k++ {
		r := sharded.build(t, Options{Shard: Shard{Index: k, Count: n}}, reqs...)
		if err := r.Err(); err != nil {
			t.Fatalf("shard %d/%d: %v", k, n, err)
		}
		mirrored += r.Count(StatusMirrored)
	}
	if mirrored != 11 {
		t.Errorf("the shards mirrored %d packages together; want each of the 11 once", mirrored)
	}
	want, got := tree(whole), tree(sharded)
	if len(got) != len(want) {
		t.Errorf("the shards wrote %d files, one build %d", len(got), len(want))
	}
	for path, sum := range want {
		if got[path] != sum {
			t.Errorf("%s differs between the sharded and the whole build", path)
		}
	}
}

// ByVersion keeps every platform of a version in one shard, and still
// gives every package exactly one shard.
func TestShardByVersion(t *testing.T) {
	plats := mustPlatforms("linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64")
	p := addrs.MustParseProvider("hashicorp/aws")
	for _, ver := range []string{"5.0.0", "5.1.0", "5.2.0", "5.3.0", "6.0.0"} {
		v := addrs.MustParseVersion(ver)
		owners := map[int]bool{}
		for _, plat := range plats {
			for k := 1; k <= 3; k++ {
				if (Shard{Index: k, Count: 3, ByVersion: true}).Owns(p, v, plat) {
					owners[k] = true
				}
			}
		}
		if len(owners) != 1 {
			t.Errorf("%s: its platforms are in shards %v; want one", ver, owners)
		}
	}
}
