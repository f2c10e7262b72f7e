package hashing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Sums is a parsed SHA256SUMS document: file name to SHA-256 digest.
type Sums map[string][sha256.Size]byte

// ParseSums parses a SHA256SUMS document in the format of sha256sum(1):
// one "<64 hex digits><two spaces><file name>" line per file. It is stricter
// than OpenTofu, which crashes on blank lines and ignores most mistakes:
// blank lines, malformed digests, names that appear twice and lines with
// extra fields are all errors, so a defect upstream is reported, not guessed
// around.
func ParseSums(doc []byte) (Sums, error) {
	sums := make(Sums)
	lines := bytes.Split(doc, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("parse SHA256SUMS: document is empty")
	}
	for i, line := range lines {
		name, sum, err := parseSumsLine(line)
		if err != nil {
			return nil, fmt.Errorf("parse SHA256SUMS line %d: %w", i+1, err)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("parse SHA256SUMS line %d: %s is listed twice", i+1, excerpt.Quote(name))
		}
		sums[name] = sum
	}
	return sums, nil
}

func parseSumsLine(line []byte) (string, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return "", sum, fmt.Errorf("blank line")
	}
	if len(fields) != 2 {
		return "", sum, fmt.Errorf("want \"<sha256>  <file name>\", got %s", excerpt.Bytes(line))
	}
	if len(fields[0]) != hex.EncodedLen(sha256.Size) {
		return "", sum, fmt.Errorf("%s is not a SHA-256 digest", excerpt.Bytes(fields[0]))
	}
	if _, err := hex.Decode(sum[:], fields[0]); err != nil {
		return "", sum, fmt.Errorf("%s is not a SHA-256 digest", excerpt.Bytes(fields[0]))
	}
	return string(fields[1]), sum, nil
}

// ZHashes returns a zh: hash for every line of the document, sorted. These
// are the hashes OpenTofu records in lock files for a signed release.
func (s Sums) ZHashes() []Hash {
	hs := make([]Hash, 0, len(s))
	for _, sum := range s {
		hs = append(hs, ZH(sum))
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	return hs
}

// Format writes the document in the format ParseSums reads, one line per
// file in byte order of the names, so the same sums give the same bytes.
func (s Sums) Format() []byte {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, name := range names {
		sum := s[name]
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	return b.Bytes()
}

// ParseHex parses a lowercase or uppercase hex SHA-256 digest.
func ParseHex(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if len(s) != hex.EncodedLen(sha256.Size) {
		return sum, fmt.Errorf("%s is not a SHA-256 digest", excerpt.Quote(s))
	}
	if _, err := hex.Decode(sum[:], []byte(s)); err != nil {
		return sum, fmt.Errorf("%s is not a SHA-256 digest", excerpt.Quote(s))
	}
	return sum, nil
}
