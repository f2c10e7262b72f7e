package endpoint

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/inputerr"
)

// Kind is what a location names.
type Kind int

const (
	// Dir is a local directory: a network mirror, or a filesystem mirror
	// (packed or unpacked) with its network tree in .tfmirror/store.
	Dir Kind = iota + 1
	// HTTP is a published network mirror, http:// or https://; read only.
	HTTP
	// S3 is a bucket of an S3-compatible store, s3://BUCKET/PREFIX/.
	S3
	// OCI is an OCI registry, oci://REPOSITORY_TEMPLATE.
	OCI
	// OCILayout is a directory of OCI image layouts, oci-layout://DIR.
	OCILayout
)

func (k Kind) String() string {
	switch k {
	case Dir:
		return "a directory"
	case HTTP:
		return "an http(s):// mirror"
	case S3:
		return "s3://BUCKET/PREFIX/"
	case OCI:
		return "oci://REPOSITORY_TEMPLATE"
	case OCILayout:
		return "oci-layout://DIRECTORY"
	}
	return "an unknown kind of location"
}

// Ref is a location as the user named it, parsed.
type Ref struct {
	// Raw is the location as given.
	Raw  string
	Kind Kind
	// Path is the directory of a Dir or an OCILayout, as given.
	Path string
}

func (r Ref) String() string { return r.Raw }

// schemes are the schemes locations may have, each written in lower case.
var schemes = map[string]Kind{"http": HTTP, "https": HTTP, "s3": S3, "oci": OCI, "oci-layout": OCILayout}

// schemePrefix matches what may be a URL scheme (RFC 3986), with what
// follows its colon.
var schemePrefix = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-_]*):(.*)$`)

// Parse says what a user-given location names. It is the one place that
// does: every command and the manifest parse locations with it.
//
// A location is a directory unless it starts with a scheme: http://,
// https://, s3://, oci:// or oci-layout://. Near misses are refused, with
// the location meant: a known scheme without its two slashes (s3:/x,
// s3:x), a scheme in capitals (S3://x), an unknown scheme with two
// slashes (gs://x, ftp://x, file://x). A directory whose name starts like
// that is written with ./ (./s3:x). A one-letter scheme is a Windows
// drive (C:\mirror). Errors are input errors (inputerr).
func Parse(raw string) (Ref, error) {
	if strings.TrimSpace(raw) == "" {
		return Ref{}, inputerr.Wrap(errors.New("the location is empty"))
	}
	if err := strayBlank(raw); err != nil {
		return Ref{}, err
	}
	m := schemePrefix.FindStringSubmatch(raw)
	if m == nil || len(m[1]) == 1 {
		return directory(raw, raw)
	}
	scheme, rest := m[1], m[2]
	canonical := strings.ReplaceAll(strings.ToLower(scheme), "_", "-")
	kind, known := schemes[canonical]
	slashes := strings.HasPrefix(rest, "//")
	shown := excerpt.WithoutUserinfo(raw)
	switch {
	case known && slashes && scheme == canonical:
		return parseURL(raw, kind, rest[2:])
	case known && slashes:
		return Ref{}, nearMiss(shown, canonical+"://"+excerpt.WithoutUserinfo(rest[2:]), "write the scheme in lower case")
	case known && kind == OCILayout && strings.HasPrefix(rest, "/"):
		return Ref{}, nearMiss(shown, canonical+"://"+rest, "a scheme is followed by two slashes, then the directory")
	case known:
		return Ref{}, nearMiss(shown, canonical+"://"+excerpt.WithoutUserinfo(strings.TrimLeft(rest, "/")), "a scheme is followed by two slashes")
	case slashes:
		return Ref{}, unsupported(shown, scheme)
	}
	return directory(raw, raw) // a directory with a colon in its name
}

// strayBlank refuses a location with blanks around it, or a scheme
// written without its colon (s3//bucket, oci//host/repo): both come from
// a slip in a script or a manifest and would otherwise name a directory.
func strayBlank(raw string) error {
	if t := strings.TrimSpace(raw); t != raw {
		return inputerr.Wrap(fmt.Errorf("%q: the location starts or ends with a blank: did you mean %q?", excerpt.WithoutUserinfo(raw), excerpt.WithoutUserinfo(t)))
	}
	for name := range schemes {
		if strings.HasPrefix(strings.ToLower(raw), name+"//") {
			return nearMiss(excerpt.WithoutUserinfo(raw), name+"://"+excerpt.WithoutUserinfo(raw[len(name)+2:]), "a scheme is followed by a colon")
		}
	}
	return nil
}

// directory is the location of the directory at path, unless path starts
// with a "~" that no shell expanded.
func directory(raw, path string) (Ref, error) {
	if err := unexpandedHome(raw, path); err != nil {
		return Ref{}, err
	}
	return Ref{Raw: raw, Kind: Dir, Path: path}, nil
}

// unexpandedHome refuses a path that starts with "~": a shell expands it
// only at the start of a word (not in --out=~/site, nor in a manifest),
// so it would make a directory named "~" where tfmirror runs.
func unexpandedHome(raw, path string) error {
	if !strings.HasPrefix(path, "~") {
		return nil
	}
	full := "the full path"
	if rest, ok := strings.CutPrefix(path, "~"); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
		full += ", as $HOME" + rest
	}
	return inputerr.Wrap(fmt.Errorf("%s: \"~\" is not expanded here (a shell expands it only at the start of a word, not after --flag= nor in a manifest): write %s, or ./%s for a directory named like that", raw, full, path))
}

func parseURL(raw string, kind Kind, rest string) (Ref, error) {
	if rest == "" || rest == "/" {
		return Ref{}, inputerr.Wrap(fmt.Errorf("%s: names no %s", raw, strings.TrimPrefix(kind.String(), "an ")))
	}
	ref := Ref{Raw: raw, Kind: kind}
	if host, _, _ := strings.Cut(rest, "/"); strings.Contains(host, "@") && (kind == OCI || kind == S3) {
		return Ref{}, inputerr.Wrap(fmt.Errorf("%s: credentials do not belong in the location, where they would be logged: %s", excerpt.WithoutUserinfo(raw), credentialsHint[kind]))
	}
	if kind == OCILayout {
		if err := unexpandedHome(raw, rest); err != nil {
			return Ref{}, err
		}
		ref.Path = rest
	}
	return ref, nil
}

// credentialsHint says where each kind of location's credentials come from.
var credentialsHint = map[Kind]string{
	OCI: "tfmirror reads a registry's from the Docker configuration (DOCKER_CONFIG), a credential helper, or TFMIRROR_OCI_USERNAME and TFMIRROR_OCI_PASSWORD",
	S3:  "tfmirror reads a bucket's from the AWS environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance's role)",
}

func nearMiss(raw, meant, why string) error {
	return inputerr.Wrap(fmt.Errorf("%s: did you mean %s? (%s; a directory named like that is written ./%s)", raw, meant, why, raw))
}

func unsupported(raw, scheme string) error {
	hint := ""
	switch strings.ToLower(scheme) {
	case "gs", "gcs", "r2", "b2", "minio", "azure", "az", "abfs", "wasb", "wasbs":
		hint = "; object stores with an S3-compatible API (Google Cloud Storage, Cloudflare R2, MinIO, ...) are written as s3://BUCKET/PREFIX/ with AWS_ENDPOINT_URL_S3 naming their endpoint"
	case "file":
		hint = "; name the directory itself, without file://"
	}
	return inputerr.Wrap(fmt.Errorf("%s: %s:// locations are not supported: tfmirror's are a directory, an https:// mirror (read only), s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE and oci-layout://DIRECTORY%s", raw, scheme, hint))
}

// Accept refuses a location the command cannot use, naming those it can.
func (r Ref) Accept(what string, kinds ...Kind) error {
	for _, k := range kinds {
		if r.Kind == k {
			return nil
		}
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return inputerr.Wrap(fmt.Errorf("%s: %s is %s; %s takes %s", r.Raw, what, r.Kind, what, joinOr(names)))
}

func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
