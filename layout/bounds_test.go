package layout

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A mirror's documents are refused, before they are decoded, once they
// list more versions or archives than a mirror writes; an error quoting
// one quotes a short, escaped excerpt.
func TestDocumentBounds(t *testing.T) {
	members := func(n int, value string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d.0.0":%s`, i, value)
		}
		return b.String()
	}
	if _, err := DecodeIndex([]byte(`{"versions":{` + members(MaxVersions, "{}") + `}}`)); err != nil {
		t.Errorf("an index.json at the bound: %v", err)
	}
	_, err := DecodeIndex([]byte(`{"versions":{` + members(MaxVersions+1, "{}") + `}}`))
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "parse index.json: ") {
		t.Errorf("an index.json past the bound: %v", err)
	}
	_, err = DecodeModuleIndex([]byte(`{"versions":{` + members(MaxVersions+1, "{}") + `}}`))
	if !errors.Is(err, ErrTooMany) {
		t.Errorf("a module index.json past the bound: %v", err)
	}
	archive := `{"url":"p.zip","hashes":["h1:x"]}`
	if _, err := DecodeVersion([]byte(`{"archives":{` + members(MaxPlatforms, archive) + `}}`)); err != nil {
		t.Errorf("a version document at the bound: %v", err)
	}
	_, err = DecodeVersion([]byte(`{"archives":{` + members(MaxPlatforms+1, archive) + `}}`))
	if !errors.Is(err, ErrTooMany) {
		t.Errorf("a version document past the bound: %v", err)
	}

	// A version key of 10 MiB of terminal control sequences.
	huge := strings.Repeat(`\u001b]0;owned\u0007`, 1<<20)
	idx, err := DecodeIndex([]byte(`{"versions":{"` + huge + `":{}}}`))
	if err == nil {
		_, err = idx.versions()
	}
	if err == nil {
		t.Fatal("the version was accepted")
	}
	if msg := err.Error(); len(msg) > 2000 || strings.ContainsAny(msg, "\x1b\x07") {
		t.Errorf("the error has %d bytes, or raw control characters: %.300q", len(msg), msg)
	}
}

// checkMembers counts the members of the named object only, over every
// occurrence of its key, whatever the strings in the document hold.
func TestCheckMembers(t *testing.T) {
	for _, tt := range []struct {
		doc   string
		limit int
		ok    bool
	}{
		{`{"versions":{"a":{},"b":{}}}`, 2, true},
		{`{"versions":{"a":{},"b":{},"c":{}}}`, 2, false},
		{`{"versions":{}}`, 0, true},
		{`{"versions":{"a":"x,\"y\",{","b":{"c":1,"d":2}}}`, 2, true},
		{`{"other":{"a":1,"b":2,"c":3},"versions":{"a":{}}}`, 1, true},
		{`{"versions":{"a":{}},"versions":{"b":{}}}`, 1, false},
		{`{"v\u0065rsions":{"a":{},"b":{}}}`, 1, false},
		{`{"x":"versions","versions":[1,2,3]}`, 1, true},
		{`{ "versions" : { "a" : [ 1 , 2 ] , "b" : { } } }`, 1, false},
	} {
		err := checkMembers([]byte(tt.doc), "versions", tt.limit)
		if (err == nil) != tt.ok {
			t.Errorf("checkMembers(%s, %d) = %v", tt.doc, tt.limit, err)
		}
	}
}
