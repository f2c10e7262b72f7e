package httpx

import (
	"net/url"
	"regexp"
	"strings"
)

// queryParam finds a query parameter in free text: after "?" or "&" (or
// "\u0026", the "&" of a JSON string), a name, "=", and a value up to the
// next separator, space, quote or backslash.
var queryParam = regexp.MustCompile(`([?&]|\\u0026)([A-Za-z0-9_.~%-]+)=([^&\s"'<>\\#()]+)`)

// RedactQueries replaces, in text that may quote URLs (an error from a
// server, a message about a location), the value of every query
// parameter whose name says it carries a secret, by the rule Redact
// applies to a parsed URL: the signatures and credentials of presigned
// URLs, tokens, keys and passwords become "xxxxx". The rest of the text
// is left as it is.
func RedactQueries(text string) string {
	if !strings.ContainsAny(text, "?&") && !strings.Contains(text, `\u0026`) {
		return text // no query parameter: most lines, and the cheap test
	}
	return queryParam.ReplaceAllStringFunc(text, func(m string) string {
		sub := queryParam.FindStringSubmatch(m)
		name := sub[2]
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		// A colon that ends the value is the message's ("URL: why"),
		// kept after the redacted value.
		value, tail := sub[3], ""
		if v, ok := strings.CutSuffix(value, ":"); ok {
			value, tail = v, ":"
		}
		if !secretParam(name) || value == redacted {
			return m
		}
		return sub[1] + sub[2] + "=" + redacted + tail
	})
}

// userinfoInURL finds the user information of a URL in free text: a
// scheme and "://", then a user (and password) up to "@".
var userinfoInURL = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@'"<>]+@`)

// RedactUserinfo replaces, in text that may quote URLs, the user name and
// password of every URL by "xxxxx", whatever printed it (a module source
// in a warning, another program's message): a token written into a git
// URL (https://oauth2:TOKEN@host/...) is never shown.
func RedactUserinfo(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return userinfoInURL.ReplaceAllString(text, "${1}"+redacted+"@")
}
