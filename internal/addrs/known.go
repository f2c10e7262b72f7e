package addrs

import (
	"fmt"
	"slices"
)

// Operating systems and architectures providers are built for: Go's
// (`go tool dist list`), since providers are Go programs. A platform
// outside them is a typing mistake no registry serves.
var (
	knownOS   = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "js", "linux", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows"}
	knownArch = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64", "ppc64le", "riscv64", "s390x", "wasm"}
)

// CheckKnownPlatform refuses a platform whose operating system or
// architecture Go does not build for, suggesting the one meant when a
// known one is close ("linux_amd46": did you mean linux_amd64?). User
// input is checked with it; documents from registries and mirrors are not
// (a registry may serve what it likes, and a client ignores what it does
// not run on).
func CheckKnownPlatform(p Platform) error {
	osOK, archOK := slices.Contains(knownOS, p.OS), slices.Contains(knownArch, p.Arch)
	if osOK && archOK {
		return nil
	}
	meant := Platform{OS: p.OS, Arch: p.Arch}
	what := ""
	if !osOK {
		what = fmt.Sprintf("unknown operating system %q", p.OS)
		meant.OS = Nearest(p.OS, knownOS)
	}
	if !archOK {
		if what != "" {
			what += " and "
		}
		what += fmt.Sprintf("unknown architecture %q", p.Arch)
		meant.Arch = Nearest(p.Arch, knownArch)
	}
	if meant.OS != "" && meant.Arch != "" {
		return fmt.Errorf("platform %s: %s; did you mean %s?", p, what, meant)
	}
	return fmt.Errorf("platform %s: %s (providers are built for Go's platforms, such as linux_amd64, darwin_arm64, windows_amd64)", p, what)
}

// Nearest is the known word at most two edits away from s (an edit being
// an insertion, a deletion, a substitution or a swap of neighbours), the
// closest first; "" when none is: what a "did you mean" names.
func Nearest(s string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(s, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// ParseUserPlatforms parses a list of platforms a user wrote (a
// manifest's platforms, --platform flags): each must parse and be known
// (CheckKnownPlatform), and none may repeat, since a platform written
// twice is most often another one mistyped. On failure it also returns
// the index of the element at fault.
func ParseUserPlatforms(raw []string) ([]Platform, int, error) {
	first := make(map[Platform]int, len(raw))
	out := make([]Platform, 0, len(raw))
	for i, s := range raw {
		p, err := ParsePlatform(s)
		if err == nil {
			err = CheckKnownPlatform(p)
		}
		if err != nil {
			return nil, i, err
		}
		if j, dup := first[p]; dup {
			return nil, i, fmt.Errorf("platform %s is listed twice (items %d and %d); was another one meant?", p, j+1, i+1)
		}
		first[p] = i
		out = append(out, p)
	}
	return out, -1, nil
}
