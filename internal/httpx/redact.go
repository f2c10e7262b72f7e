package httpx

import (
	"net/url"
	"strings"
)

// redacted replaces a secret in a URL shown in a message.
const redacted = "xxxxx"

// Redact returns u as it may appear in a message or an event, and is the
// only way tfmirror shows a URL it was given: a password becomes "xxxxx"
// as in url.URL.Redacted, and so does a user name without a password
// (often a token); the value of every query parameter whose name says it
// carries a secret becomes "xxxxx" too, whatever its case: presigned URLs'
// X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, X-Goog-*,
// CloudFront's Signature, Azure's sig, and token, access_token, key,
// password and the like (see secretParam). The fragment, which is never
// sent, is dropped.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		if _, ok := c.User.Password(); ok {
			c.User = url.UserPassword(c.User.Username(), redacted)
		} else {
			c.User = url.User(redacted)
		}
	}
	c.RawQuery = redactQuery(c.RawQuery)
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// redactQuery replaces the values of secret parameters in a raw query,
// leaving everything else as it was sent.
func redactQuery(raw string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		name, _, hasValue := strings.Cut(part, "=")
		key, err := url.QueryUnescape(name)
		if err != nil {
			key = name
		}
		if hasValue && secretParam(key) {
			parts[i] = name + "=" + redacted
		}
	}
	return strings.Join(parts, "&")
}

// secretNames are query parameters that carry a secret under a name too
// short or too generic to find by a part of it.
var secretNames = map[string]bool{"sig": true, "key": true, "code": true, "auth": true, "jwt": true}

// secretMarkers are parts of the names of query parameters that carry
// secrets: signatures and credentials of presigned URLs (S3, GCS,
// CloudFront, Azure SAS), tokens and passwords.
var secretMarkers = []string{
	"signature", "credential", "token", "secret", "password", "passwd",
	"apikey", "api_key", "api-key", "accesskey", "access_key", "authorization", "session",
}

// secretParam reports whether a query parameter named name carries a
// secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if secretNames[n] {
		return true
	}
	for _, m := range secretMarkers {
		if strings.Contains(n, m) {
			return true
		}
	}
	return false
}
