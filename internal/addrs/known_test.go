package addrs

import (
	"strings"
	"testing"
)

func TestCheckKnownPlatform(t *testing.T) {
	for _, ok := range []string{"linux_amd64", "darwin_arm64", "windows_arm64", "freebsd_386", "linux_riscv64", "openbsd_arm"} {
		if err := CheckKnownPlatform(MustParsePlatform(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"linux_amd46":   "unknown architecture \"amd46\"; did you mean linux_amd64?",
		"linx_amd64":    "unknown operating system \"linx\"; did you mean linux_amd64?",
		"darwn_arm46":   "did you mean darwin_arm64?",
		"windows_x64":   "unknown architecture \"x64\" (providers are built for Go's platforms",
		"macos_arm64":   "unknown operating system \"macos\" (providers",
		"linux_aarch64": "unknown architecture \"aarch64\"",
	} {
		err := CheckKnownPlatform(MustParsePlatform(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", in, err, want)
		}
	}
}

// TestParseUserPlatforms keeps the order given, refuses a platform written
// twice, and gives the index of the element at fault.
func TestParseUserPlatforms(t *testing.T) {
	got, _, err := ParseUserPlatforms([]string{"linux_amd64", "darwin_arm64"})
	if err != nil || len(got) != 2 || got[0].String() != "linux_amd64" || got[1].String() != "darwin_arm64" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, c := range []struct {
		raw  []string
		at   int
		want string
	}{
		{[]string{"linux_amd64", "darwin_arm64", "linux_amd64"}, 2, "platform linux_amd64 is listed twice (items 1 and 3); was another one meant?"},
		{[]string{"linux_amd64", "linux_amd46"}, 1, "did you mean linux_amd64?"},
		{[]string{"Linux-AMD64"}, 0, "must be os_arch"},
	} {
		_, at, err := ParseUserPlatforms(c.raw)
		if err == nil || at != c.at || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v at %d; want %q at %d", c.raw, err, at, c.want, c.at)
		}
	}
}
