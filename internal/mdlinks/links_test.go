package mdlinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks walks every markdown file of the repository and checks
// each relative link: the file or directory it names exists, and a
// #fragment into a markdown file names one of its headings (GitHub's
// anchors). Links to other sites are not fetched.
func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d markdown files under %s", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := anchors[p]; ok {
			return a
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(data))
		anchors[p] = a
		return a
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, l := range links(string(data)) {
			target, fragment, _ := strings.Cut(l.target, "#")
			if target == "" { // a fragment of this file
				if fragment != "" && !anchorsOf(f)[fragment] {
					t.Errorf("%s:%d: no heading for #%s in this file", rel, l.line, fragment)
				}
				continue
			}
			checked++
			dest := filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			if strings.HasPrefix(target, "/") {
				dest = filepath.Join(root, filepath.FromSlash(target))
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s:%d: link to %s: %v", rel, l.line, l.target, err)
				continue
			}
			if fragment != "" && !info.IsDir() && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[fragment] {
				t.Errorf("%s:%d: link to %s: %s has no heading for #%s", rel, l.line, l.target, target, fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked")
	}
}

type link struct {
	target string
	line   int
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s+(\S+)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links are the relative link targets of a markdown document, outside code
// blocks and code spans.
func links(doc string) []link {
	var out []link
	fence := ""
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, tg := range targets {
			tg = strings.Trim(tg, "<>")
			if scheme.MatchString(tg) || strings.HasPrefix(tg, "//") {
				continue // another site, mailto:, ...
			}
			out = append(out, link{target: tg, line: i + 1})
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a document's headings: the
// text lower-cased, punctuation dropped, spaces as hyphens, and -1, -2, ...
// for repeats.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := slug(text)
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
