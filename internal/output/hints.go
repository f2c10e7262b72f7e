package output

import (
	"strings"

	"github.com/tfmirror/tfmirror/mirror"
)

// settingHints name, for the core's neutral advice, the flag or manifest
// setting that changes it: the core describes the problem, the command
// line says how to act on it.
var settingHints = strings.NewReplacer(
	mirror.AdviceRefuseUnsigned, mirror.AdviceRefuseUnsigned+`: trust "*" { unsigned = "refuse" } in the manifest, or --require-signatures`,
	mirror.AdviceRefuseExpired, mirror.AdviceRefuseExpired+`: trust "*" { expired_keys = "refuse" } in the manifest`,
	mirror.AdviceKeyChange, mirror.AdviceKeyChange+`: key_change = "refuse" or accept_new_keys = ["KEYID"] in the provider's trust block`,
	mirror.AdviceAcceptNewKey, mirror.AdviceAcceptNewKey+`: accept_new_keys = ["KEYID"] in the provider's trust block`,
)

// withHints adds the settings that change what a message describes.
func WithHints(msg string) string { return settingHints.Replace(msg) }

func hinted(msgs []string) []string {
	if msgs == nil {
		return nil
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = WithHints(m)
	}
	return out
}
