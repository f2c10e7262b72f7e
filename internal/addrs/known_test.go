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
