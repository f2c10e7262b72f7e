module github.com/tfmirror/tfmirror

go 1.26.8

require (
	github.com/ProtonMail/go-crypto v1.5.2
	github.com/apparentlymart/go-versions v1.0.3
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/go-version v1.9.0
	github.com/hashicorp/hcl/v2 v2.25.0
	github.com/opentofu/registry-address/v2 v2.0.0-20260307135325-45f3562374e4
	github.com/opentofu/svchost v0.0.0-20250610175836-86c9e5e3d8c8
	github.com/spf13/cobra v1.10.2
	github.com/zclconf/go-cty v1.19.0
	golang.org/x/mod v0.42.0
	golang.org/x/net v0.59.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/agext/levenshtein v1.2.1 // indirect
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/apparentlymart/go-textseg/v17 v17.0.1 // indirect
	github.com/cloudflare/circl v1.6.3 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mitchellh/go-wordwrap v1.0.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/oauth2 v0.30.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
