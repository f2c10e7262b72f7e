package registry

import (
	"github.com/tfmirror/tfmirror/internal/regproto"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Bounds of a versions document besides its size (maxVersionsBytes), so
// that no document can make the client hold more than a real registry
// ever sends, whatever it packs into its bytes:
//
//   - maxVersions (100,000 versions of one provider or module package):
//     the providers with the most releases have about 1,000 versions;
//   - maxPlatforms (1,000 platforms of one provider version): a release
//     is built for about 20 operating systems and architectures, and Go
//     knows fewer than 50 pairs;
//   - maxModules (100 modules in a module versions document): clients
//     read the first, and registries send one;
//   - maxWarnings (100 warnings in a provider versions document) of at
//     most maxWarningBytes (4 KiB) each: a registry sends one or two
//     sentences (a deprecation); a longer one is cut (cutWarning), as it
//     is only ever shown.
//
// A document over a bound is refused while it is decoded, before more
// than the bound is held.
const (
	maxVersions  = 100_000
	maxPlatforms = 1_000
	maxModules   = 100
	maxWarnings  = 100

	maxWarningBytes = 4 << 10
)

// errTooMany is a document that lists more than a bound allows.
var errTooMany = errors.New("the document lists more than tfmirror reads")

// boundedList is a JSON array decoded one element at a time, refusing one
// of more than max elements before decoding the one past it. Each element
// starts as newItem returns it (the bounds of its own lists set), or as
// its zero value.
type boundedList[T any] struct {
	items   []T
	max     int
	what    string // "versions", for the message
	newItem func() T
}

func (l *boundedList[T]) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		l.items = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("%s: not a JSON array", l.what)
	}
	l.items = l.items[:0]
	for dec.More() {
		if len(l.items) == l.max {
			return fmt.Errorf("%w: more than %d %s", errTooMany, l.max, l.what)
		}
		var item T
		if l.newItem != nil {
			item = l.newItem()
		}
		if err := dec.Decode(&item); err != nil {
			return err
		}
		l.items = append(l.items, item)
	}
	_, err := dec.Token() // the closing bracket
	return err
}

// providerVersions is regproto.Versions as the client reads it: the
// version strings, with the platforms of each.
type providerVersions struct {
	Versions boundedList[providerVersion] `json:"versions"`
	Warnings boundedList[string]          `json:"warnings"`
}

type providerVersion struct {
	Version   string                         `json:"version"`
	Platforms boundedList[regproto.Platform] `json:"platforms"`
}

func newProviderVersions() providerVersions {
	return providerVersions{
		Versions: boundedList[providerVersion]{
			max: maxVersions, what: "versions",
			newItem: func() providerVersion {
				return providerVersion{Platforms: boundedList[regproto.Platform]{max: maxPlatforms, what: "platforms of a version"}}
			},
		},
		Warnings: boundedList[string]{max: maxWarnings, what: "warnings"},
	}
}

// cutWarnings are a versions document's warnings as tfmirror keeps them:
// blank ones left out, each cut to at most maxWarningBytes (at a
// character boundary, "..." marking the cut). They are kept as the
// registry wrote them otherwise, and escaped wherever they are printed.
func cutWarnings(raw []string) []string {
	var out []string
	for _, w := range raw {
		if strings.TrimSpace(w) == "" {
			continue
		}
		out = append(out, excerpt.Clip(w, maxWarningBytes))
	}
	return out
}

// moduleVersions is regproto.ModuleVersions as the client reads it.
type moduleVersions struct {
	Modules boundedList[moduleVersionList] `json:"modules"`
}

type moduleVersionList struct {
	Versions boundedList[moduleVersion] `json:"versions"`
}

type moduleVersion struct {
	Version string `json:"version"`
}

func newModuleVersions() moduleVersions {
	return moduleVersions{Modules: boundedList[moduleVersionList]{
		max: maxModules, what: "modules",
		newItem: func() moduleVersionList {
			return moduleVersionList{Versions: boundedList[moduleVersion]{max: maxVersions, what: "versions"}}
		},
	}}
}

// decodeJSON decodes a document into v; a decoder's complaint, which may
// quote the document (a number as it was written, say), is quoted bounded
// and escaped.
func decodeJSON(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return excerpt.Error(err)
	}
	return nil
}
