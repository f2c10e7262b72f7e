package output

import (
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/mirror"
)

// The core's advice is neutral; the command line names the setting.
func TestHintsNameTheSetting(t *testing.T) {
	for advice, want := range map[string]string{
		mirror.AdviceRefuseUnsigned: "--require-signatures",
		mirror.AdviceRefuseExpired:  `expired_keys = "refuse"`,
	} {
		if strings.Contains(advice, "--") || strings.Contains(advice, "=") {
			t.Errorf("core advice %q names a flag or a setting", advice)
		}
		if got := WithHints("x 1.0.0: accepted (" + advice + ")"); !strings.Contains(got, want) {
			t.Errorf("WithHints(%q) = %q, want it to name %s", advice, got, want)
		}
	}
}
