package settings

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Redactor replaces, in text about to be printed, every credential the
// process holds, wherever outside text quotes it: an error body a server
// echoed a token into, a URL with a signature. It is the one place that
// knows them all; the command line applies it to every line it prints
// (text and JSON, stdout and stderr, the final error line).
//
// It knows:
//   - from the environment (NewRedactor): AWS_SECRET_ACCESS_KEY,
//     AWS_SESSION_TOKEN and AWS_ACCESS_KEY_ID, TFMIRROR_OCI_PASSWORD,
//     every TF_TOKEN_* value, and any variable whose name ends in _TOKEN,
//     _SECRET, _PASSWORD, _PASSWD or _API_KEY (GITHUB_TOKEN, CI_JOB_TOKEN);
//   - from the settings (Settings.Secrets, added by config.Resolve): the
//     registry tokens of the manifest's credentials blocks, and the
//     passwords and tokens of the Docker-style config files;
//   - in any text: the values of the query parameters that carry secrets
//     (httpx.RedactQueries: presigned URLs' signatures and credentials,
//     tokens, keys).
//
// Each is replaced by "xxxxx", also in the form a JSON string holds it.
// Values shorter than MinSecretLength are left alone: they would shred
// the output, and are no credentials worth the name. A nil *Redactor
// redacts query parameters only.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // and their JSON forms, longest first
	repl    *strings.Replacer
}

// MinSecretLength is the length from which a value is redacted.
const MinSecretLength = 6

// redactedText replaces a secret in printed text, as httpx does in URLs.
const redactedText = "xxxxx"

// NewRedactor returns a redactor of the credentials in the environment
// kv (in os.Environ's form).
func NewRedactor(kv []string) *Redactor {
	r := &Redactor{}
	r.Add(EnvSecrets(kv)...)
	return r
}

// secretVariables are the variables whose values are credentials,
// besides those secretSuffixes and TF_TOKEN_ find.
var secretVariables = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECURITY_TOKEN",
	"TFMIRROR_OCI_PASSWORD",
}

var secretSuffixes = []string{"_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD", "_API_KEY", "_SECRET_ACCESS_KEY"}

// EnvSecrets returns the values of the variables of the environment kv
// that hold credentials.
func EnvSecrets(kv []string) []string {
	var out []string
	for name, v := range environ.Parse(kv) {
		upper := strings.ToUpper(name)
		secret := slices.Contains(secretVariables, upper) || strings.HasPrefix(upper, "TF_TOKEN_")
		for _, s := range secretSuffixes {
			secret = secret || strings.HasSuffix(upper, s)
		}
		if secret {
			out = append(out, v)
		}
	}
	return out
}

// Secrets returns the credentials the settings hold: every registry
// token, and the credentials of the environment.
func (s Settings) Secrets() []string {
	var out []string
	for _, t := range s.Tokens {
		out = append(out, t)
	}
	out = append(out, EnvSecrets(s.Env.List())...)
	return out
}

// Add makes the redactor replace secrets too.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLength {
			continue
		}
		for _, form := range jsonForms(s) {
			if !slices.Contains(r.secrets, form) {
				r.secrets = append(r.secrets, form)
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	// Longest first, so that a secret containing another is replaced
	// whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(r.secrets))
	for _, s := range r.secrets {
		pairs = append(pairs, s, redactedText)
	}
	r.repl = strings.NewReplacer(pairs...)
}

// jsonForms are s and the forms a JSON string holds it in (with and
// without HTML escaping).
func jsonForms(s string) []string {
	out := []string{s}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		q := strings.TrimSuffix(b.String(), "\n")
		out = append(out, q[1:len(q)-1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Redact returns text with every credential replaced.
func (r *Redactor) Redact(text string) string {
	if r != nil {
		r.mu.RLock()
		repl := r.repl
		r.mu.RUnlock()
		if repl != nil {
			text = repl.Replace(text)
		}
	}
	return httpx.RedactUserinfo(httpx.RedactQueries(text))
}
