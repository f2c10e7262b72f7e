package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// errNotCanonical means a JSON document is not byte for byte what
// tfmirror writes for what it holds.
var errNotCanonical = errors.New("not in the canonical form tfmirror writes (padded, reordered, duplicated or edited JSON)")

// checkCanonical decodes the mirror document at rel (slash-separated,
// relative to the mirror) as its kind and requires data to be exactly
// layout.Encode of the result. So a bundle carries no byte a document's
// meaning does not fix: no padding, no duplicate or case-variant keys that
// another JSON reader could take differently from the one that verified
// it.
func checkCanonical(rel string, data []byte) error {
	v, err := layout.DecodeDocument(rel, data)
	if err != nil {
		return err
	}
	enc, err := layout.Encode(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(enc, data) {
		return errNotCanonical
	}
	return nil
}

// documentProblems checks every JSON document among files (paths relative
// to the mirror) with checkCanonical, reading each with read; problems
// are reported at prefix+path.
func documentProblems(files []string, prefix string, read func(rel string) ([]byte, error)) []mirror.Problem {
	var problems []mirror.Problem
	for _, rel := range files {
		if !strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, layout.SBOMSuffix) {
			continue // an SBOM is no document of the tree: verify checks it (CheckSBOM)
		}
		data, err := read(rel)
		if err == nil {
			err = checkCanonical(rel, data)
		}
		if err != nil {
			problems = append(problems, mirror.Problem{Path: prefix + rel, Message: err.Error()})
		}
	}
	return problems
}

// stagedProblems checks what a staged bundle holds besides what verify
// checks: every mirror document is canonical and every lock file parses.
func stagedProblems(s *staged) []mirror.Problem {
	var docs []string
	var problems []mirror.Problem
	for _, f := range s.manifest.Files {
		if rel, ok := strings.CutPrefix(f.Path, MirrorDir+"/"); ok {
			docs = append(docs, rel)
		} else if strings.HasPrefix(f.Path, LockFilesDir+"/") {
			if err := checkLockFile(s.path(f.Path), f.Path); err != nil {
				problems = append(problems, mirror.Problem{Path: f.Path, Message: strings.ReplaceAll(err.Error(), "\n", "; ")})
			}
		} else if strings.HasPrefix(f.Path, CLIConfigDir+"/") {
			if err := checkSnippet(s.path(f.Path), f.Path); err != nil {
				problems = append(problems, mirror.Problem{Path: f.Path, Message: strings.ReplaceAll(err.Error(), "\n", "; ")})
			}
		}
	}
	read := func(rel string) ([]byte, error) {
		return readLimited(s.path(MirrorDir+"/"+rel), layout.MaxDocumentBytes)
	}
	return append(documentProblems(docs, MirrorDir+"/", read), problems...)
}

func checkLockFile(file, name string) error {
	data, err := readLimited(file, maxExtraBytes)
	if err != nil {
		return err
	}
	return parseLockFile(data, name)
}

// checkSnippet refuses a cli-config/ file that is not one of the CLI
// configuration snippets bundle create writes: another name, or content
// other than comments, provider_installation blocks and host blocks naming
// services below URLPlaceholder. An operator copies
// these files into a client's configuration, so a bundle cannot carry
// anything else there (a credentials block, a script).
func checkSnippet(file, name string) error {
	known := slices.Concat(providerSnippets, moduleSnippets)
	if !slices.Contains(known, path.Base(name)) {
		return fmt.Errorf("not a CLI configuration snippet bundle create writes (%s)", strings.Join(slices.Sorted(slices.Values(known)), ", "))
	}
	data, err := readLimited(file, maxExtraBytes)
	if err != nil {
		return err
	}
	return config.CheckInstallationSnippet(data, name, config.Placeholders{URL: URLPlaceholder, Path: PathPlaceholder})
}

// parseLockFile refuses what OpenTofu would not read as a lock file.
func parseLockFile(data []byte, name string) error {
	if _, err := lockfile.Parse(data, name); err != nil {
		return fmt.Errorf("not a lock file: %w", err)
	}
	return nil
}

// readLimited reads a regular file of at most limit bytes (io.ReadAll
// never returns a nil slice).
func readLimited(file string, limit int64) ([]byte, error) {
	f, err := hashing.OpenRegular(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", file, limit)
	}
	return data, nil
}
