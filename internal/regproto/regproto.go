// Package regproto holds the documents of the registry protocols: service
// discovery (/.well-known/terraform.json) and its service IDs, the
// provider registry protocol (providers.v1: the versions list and the
// download document) and the module registry protocol (modules.v1: the
// versions list and the download answer). The registry client decodes
// them; the registry replica, the test registry and the benchmark origin
// encode them. It owns their shape only, not what is checked about their
// values.
package regproto

// Versions is the answer to GET :namespace/:type/versions.
type Versions struct {
	Versions []Version `json:"versions"`
	// Warnings are what the registry says of the provider as a whole (a
	// deprecation, say), which OpenTofu and Terraform print at init.
	Warnings []string `json:"warnings,omitempty"`
}

// Version is one entry of a versions list.
type Version struct {
	Version   string     `json:"version"`
	Protocols []string   `json:"protocols"`
	Platforms []Platform `json:"platforms"`
}

// Platform is an operating system and architecture a version supports.
type Platform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Download is the answer to GET :namespace/:type/:version/download/:os/:arch.
type Download struct {
	Protocols           []string    `json:"protocols"`
	OS                  string      `json:"os"`
	Arch                string      `json:"arch"`
	Filename            string      `json:"filename"`
	DownloadURL         string      `json:"download_url"`
	ShasumsURL          string      `json:"shasums_url"`
	ShasumsSignatureURL string      `json:"shasums_signature_url"`
	Shasum              string      `json:"shasum"`
	SigningKeys         SigningKeys `json:"signing_keys"`
	// Packages is OpenTofu 1.12's field: by "os_arch", every platform's
	// package hashes and size, so clients lock every platform's hashes.
	Packages map[string]Package `json:"packages,omitempty"`
}

// Package is one platform's entry in a download document's packages.
type Package struct {
	Hashes      []string `json:"hashes"`
	PackageSize int64    `json:"package_size"`
}

// SigningKeys lists the keys allowed to sign a release's SHA256SUMS.
type SigningKeys struct {
	GPGPublicKeys []GPGKey `json:"gpg_public_keys"`
}

// GPGKey is one ASCII-armored OpenPGP public key.
type GPGKey struct {
	KeyID          string  `json:"key_id"`
	ASCIIArmor     string  `json:"ascii_armor"`
	TrustSignature string  `json:"trust_signature"`
	Source         string  `json:"source"`
	SourceURL      *string `json:"source_url"`
}
