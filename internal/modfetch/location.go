package modfetch

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// archiveKind is how an archive is packed.
type archiveKind string

const (
	kindZip   archiveKind = "zip"
	kindTarGz archiveKind = "tar.gz"
)

// source is a parsed location.
type source struct {
	git     bool        // a git repository; an archive otherwise
	url     *url.URL    // what is fetched: without ref and depth, or the archive hint
	shown   string      // the whole location as errors show it (redacted)
	archive archiveKind // for archives
	ref     string      // for git: a tag, branch or commit; "" for the default branch
	subdir  string      // cleaned, slash-separated; may hold glob patterns; "" for the root
}

// parseLocation parses a location as go-getter would, accepting only the
// forms this package fetches. Once the URL parses, the source's shown is
// set, refusals included.
func parseLocation(loc string) (source, error) {
	getter, rest := addrs.SplitForcedGetter(loc)
	if getter != "" && getter != "git" {
		return source{}, fmt.Errorf("%s:: sources are not supported: only https archives and git::https repositories", excerpt.Text(getter, 0))
	}
	raw, subdir := addrs.SplitModuleSubdir(rest)
	u, err := url.Parse(raw)
	if err != nil {
		return source{}, fmt.Errorf("not a URL: %w", stripURLError(err))
	}
	if u.Scheme == "" {
		return source{}, errors.New("not an absolute URL: relative locations must be resolved against the download URL first, and shorthands such as github.com/org/repo are not supported")
	}
	if err := checkTransport(u, getter == "git"); err != nil {
		return source{}, err
	}
	if u.Host == "" {
		return source{}, errors.New("URL has no host")
	}
	src := source{git: getter == "git", url: u, shown: showLocation(getter, u, subdir)}
	if src.subdir, err = cleanSubdir(subdir); err != nil {
		return src, err
	}
	if src.git {
		return src, src.parseGitQuery()
	}
	return src, src.parseArchiveKind()
}

// cleanSubdir validates a subdirectory: relative, no "..", no backslash,
// valid glob patterns.
func cleanSubdir(subdir string) (string, error) {
	if subdir == "" {
		return "", nil
	}
	refuse := func(why string) error { return fmt.Errorf("subdirectory %s %s", excerpt.Quote(subdir), why) }
	if strings.HasPrefix(subdir, "/") || strings.ContainsAny(subdir, "\\\x00") {
		return "", refuse("is absolute or holds a backslash or NUL")
	}
	for _, part := range strings.Split(subdir, "/") {
		if part == ".." {
			return "", refuse(`leaves the package (holds "..")`)
		}
		if _, err := path.Match(part, ""); err != nil {
			return "", refuse("is not a valid pattern")
		}
	}
	if c := path.Clean(subdir); c != "." {
		return c, nil
	}
	return "", nil
}

// checkTransport accepts https, and http only to a loopback host.
func checkTransport(u *url.URL, git bool) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("plain http is not allowed (only to 127.0.0.1, ::1 or localhost, for tests): use https")
	case git:
		return fmt.Errorf("git over %s is not supported: only git::https", excerpt.Text(u.Scheme, 0))
	}
	return fmt.Errorf("scheme %s is not supported: only https archives and git::https repositories", excerpt.Text(u.Scheme, 0))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// parseGitQuery takes ref and depth out of a git source's query.
func (s *source) parseGitQuery() error {
	rest, refs := cutParam(s.url.RawQuery, "ref")
	rest, depths := cutParam(rest, "depth")
	if _, keys := cutParam(rest, "sshkey"); keys != nil {
		return errors.New("sshkey is for git over ssh, which is not supported")
	}
	if len(refs) > 1 || len(depths) > 1 {
		return errors.New("ref and depth may be given once each")
	}
	if len(refs) == 1 {
		if err := checkRef(refs[0]); err != nil {
			return err
		}
		s.ref = refs[0]
	}
	if len(depths) == 1 {
		if n, err := strconv.Atoi(depths[0]); err != nil || n < 1 {
			return fmt.Errorf("depth %s is not a positive number", excerpt.Quote(depths[0]))
		}
	}
	s.url.RawQuery = rest
	return nil
}

// checkRef refuses what git could take for an option or that no tag,
// branch or commit is named.
func checkRef(ref string) error {
	bad := ref == "" || strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "/") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "@{") ||
		strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`~^:?*[\`, r) })
	if bad {
		return fmt.Errorf("ref %s is not a valid tag, branch or commit name", excerpt.Quote(ref))
	}
	return nil
}

// parseArchiveKind takes the archive kind from the "archive" hint, which
// is removed, or from the path's extension.
func (s *source) parseArchiveKind() error {
	rest, hints := cutParam(s.url.RawQuery, "archive")
	s.url.RawQuery = rest
	switch {
	case len(hints) > 1:
		return errors.New("archive may be given once")
	case len(hints) == 1:
		kind, ok := archiveKindOf(hints[0])
		if !ok {
			return fmt.Errorf("archive=%s is not supported: only zip, tar.gz and tgz", excerpt.Text(hints[0], 0))
		}
		s.archive = kind
		return nil
	}
	p := strings.ToLower(s.url.Path)
	for _, ext := range []string{".zip", ".tar.gz", ".tgz"} {
		if strings.HasSuffix(p, ext) {
			s.archive, _ = archiveKindOf(ext[1:])
			return nil
		}
	}
	return errors.New("not an archive (.zip, .tar.gz, .tgz or ?archive=): looking up an X-Terraform-Get header, as go-getter would, is not supported")
}

func archiveKindOf(hint string) (archiveKind, bool) {
	switch hint {
	case "zip":
		return kindZip, true
	case "tar.gz", "tgz":
		return kindTarGz, true
	}
	return "", false
}

// cutParam removes every name=value from a raw query, leaving the other
// parameters as they were written (a signed URL stays signed), and returns
// the values removed.
func cutParam(raw, name string) (string, []string) {
	if raw == "" {
		return raw, nil
	}
	var kept, values []string
	for _, part := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != name {
			kept = append(kept, part)
			continue
		}
		if value, err := url.QueryUnescape(v); err == nil {
			v = value
		}
		values = append(values, v)
	}
	return strings.Join(kept, "&"), values
}

// provenance is the location as fetched, for Result.Source: scheme, host,
// path and the git ref; no userinfo, no other query.
func (s source) provenance() string {
	u := url.URL{Scheme: s.url.Scheme, Host: s.url.Host, Path: s.url.Path, RawPath: s.url.RawPath}
	if !s.git {
		return u.String()
	}
	if s.ref != "" {
		u.RawQuery = "ref=" + url.QueryEscape(s.ref)
	}
	return "git::" + u.String()
}

// showLocation is a location as errors show it: the URL redacted as
// httpx.Redact does (no userinfo, no secret query values).
func showLocation(getter string, u *url.URL, subdir string) string {
	c := *u
	if rest, keys := cutParam(c.RawQuery, "sshkey"); keys != nil { // a private key
		c.RawQuery = strings.TrimPrefix(rest+"&sshkey=xxxxx", "&")
	}
	s := httpx.Redact(&c)
	if getter != "" {
		s = getter + "::" + s
	}
	if subdir != "" {
		s += " (subdirectory " + subdir + ")"
	}
	return s
}

// stripURLError returns the reason of a *url.Error, which would print the
// URL whole.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
