package hashing

import (
	"encoding/binary"
	"errors"
	"io"
	"path"
	"runtime/debug"
	"strings"
)

// The Go linker writes a program's build information (the Go version and
// the modules it was built from) as a 32-byte header that starts with
// this magic, at a 16-byte aligned address of the data segment. Since Go
// 1.18 (flag bit 2) the two strings follow the header inline, each
// prefixed by its length as a varint; before, the header held pointers.
const buildInfoMagic = "\xff Go buildinf:"

// buildInfoWord is the magic's first eight bytes as a little-endian word:
// what alignedIndex compares each aligned offset with.
var buildInfoWord = binary.LittleEndian.Uint64([]byte(buildInfoMagic[:8]))

const (
	buildInfoAlign      = 16
	buildInfoHeaderSize = 32
	buildInfoInline     = 0x2
	// The bounds of what a scan keeps. A real version string is a few
	// dozen bytes and the module list of the largest providers about
	// 100 KiB; more is not a Go program's build information.
	maxBuildVersion = 1 << 10
	maxBuildModInfo = 4 << 20
	// How many well-formed headers a scan follows before it gives up on
	// an entry: one is the norm, every one is followed to its end.
	maxBuildInfoTries = 16
)

// A BuildInfoScanner finds the Go build information of an executable in
// its bytes as they stream past, the information `go version -m` and
// debug/buildinfo read from a file: write the executable's bytes to it in
// order, then ask Info. It keeps no more than the candidate it is reading
// and never fails a write: what it cannot read simply is not there.
//
// It reads the build information of Go 1.18 and later (the inline form);
// for an older program, or a file that is not a Go program, Info is nil.
// It reads the first well-formed build information at a 16-byte aligned
// offset of the file, which is where debug/buildinfo finds it (the
// linker aligns the data segment's file offset and address alike).
type BuildInfoScanner struct {
	off   int64  // file offset of the next byte written
	tail  []byte // the last bytes searched, which may start the magic
	cand  []byte // a candidate from its magic on, while it is read
	start int64  // file offset of cand[0]
	tries int
	info  *debug.BuildInfo
	done  bool
}

// Write looks for the build information in p; it always succeeds.
func (s *BuildInfoScanner) Write(p []byte) (int, error) {
	n := len(p)
	if !s.done {
		s.feed(p, s.off)
	}
	s.off += int64(n)
	return n, nil
}

// Info returns the build information found, nil when there is none.
func (s *BuildInfoScanner) Info() *debug.BuildInfo { return s.info }

// Reset prepares the scanner for another file.
func (s *BuildInfoScanner) Reset() { *s = BuildInfoScanner{tail: s.tail[:0]} }

func (s *BuildInfoScanner) feed(p []byte, base int64) {
	for len(p) > 0 && !s.done {
		if s.cand != nil {
			p, base = s.extend(p, base)
			continue
		}
		p, base = s.search(p, base)
	}
}

// search looks for an aligned magic in p, first where it may straddle
// the end of the previous write. It returns what follows a candidate's
// start, nothing when there is none.
func (s *BuildInfoScanner) search(p []byte, base int64) ([]byte, int64) {
	if len(s.tail) > 0 {
		head := p[:min(len(p), len(buildInfoMagic)-1)]
		joined := append(s.tail, head...)
		tailStart := base - int64(len(s.tail))
		if i := alignedIndex(joined, tailStart); i >= 0 && i < len(s.tail) {
			s.begin(joined[i:len(s.tail)], tailStart+int64(i))
			return p, base
		}
		s.tail = joined
	}
	if i := alignedIndex(p, base); i >= 0 {
		s.begin(nil, base+int64(i))
		return p[i:], base + int64(i)
	}
	// Keep the last bytes seen, which may start a magic the next write
	// ends.
	s.keepTail(p)
	return nil, base + int64(len(p))
}

// keepTail keeps the last bytes seen, which may start a magic that the
// next write ends. s.tail already holds the bytes before p and p itself
// when p is short.
func (s *BuildInfoScanner) keepTail(p []byte) {
	keep := len(buildInfoMagic) - 1
	switch {
	case len(p) >= keep:
		s.tail = append(s.tail[:0], p[len(p)-keep:]...)
	case len(s.tail) == 0:
		s.tail = append(s.tail, p...)
	}
	if extra := len(s.tail) - keep; extra > 0 {
		s.tail = s.tail[:copy(s.tail, s.tail[extra:])]
	}
}

// alignedIndex is the index in p, whose first byte is at file offset
// base, of the first magic at an aligned offset; -1 when there is none.
// It looks only at aligned offsets, one in sixteen, and compares eight
// bytes at a time, four offsets per step: the scan costs next to nothing
// beside inflating and hashing the same bytes, even through an executable
// that has no build information to find.
func alignedIndex(p []byte, base int64) int {
	const step = 4 * buildInfoAlign
	i := int((buildInfoAlign - base%buildInfoAlign) % buildInfoAlign)
	for {
		for ; i+step+len(buildInfoMagic) <= len(p); i += step {
			q := p[i : i+step]
			if binary.LittleEndian.Uint64(q[0:]) == buildInfoWord || binary.LittleEndian.Uint64(q[16:]) == buildInfoWord ||
				binary.LittleEndian.Uint64(q[32:]) == buildInfoWord || binary.LittleEndian.Uint64(q[48:]) == buildInfoWord {
				break
			}
		}
		// The offsets of the step where the first eight bytes matched,
		// or of what is left after the last whole step.
		for end := min(i+step, len(p)); i < end && i+len(buildInfoMagic) <= len(p); i += buildInfoAlign {
			if binary.LittleEndian.Uint64(p[i:]) == buildInfoWord && string(p[i+8:i+len(buildInfoMagic)]) == buildInfoMagic[8:] {
				return i
			}
		}
		if i+len(buildInfoMagic) > len(p) {
			return -1
		}
	}
}

func (s *BuildInfoScanner) begin(prefix []byte, start int64) {
	s.cand = append(make([]byte, 0, 256), prefix...)
	s.start = start
	s.tail = s.tail[:0]
}

// extend adds p to the candidate until it is whole or ruled out, and
// returns what it did not take.
func (s *BuildInfoScanner) extend(p []byte, base int64) ([]byte, int64) {
	for len(p) > 0 {
		step := min(len(p), 4096)
		s.cand = append(s.cand, p[:step]...)
		p, base = p[step:], base+int64(step)
		info, status := parseBuildInfo(s.cand)
		switch status {
		case buildInfoMore:
			continue
		case buildInfoFound:
			s.info, s.done = info, true
			return nil, base
		}
		// Not build information after all: search again from the
		// byte after its magic, with what is still to come.
		rest, restStart := s.cand[1:], s.start+1
		s.cand = nil
		if s.tries++; s.tries >= maxBuildInfoTries {
			s.done = true
			return nil, base
		}
		s.feed(rest, restStart)
		return p, base
	}
	return nil, base
}

type buildInfoStatus int

const (
	buildInfoMore buildInfoStatus = iota
	buildInfoFound
	buildInfoNone
)

var errBuildInfoShort = errors.New("short")

// parseBuildInfo reads the build information at the start of b, as
// debug/buildinfo reads it.
func parseBuildInfo(b []byte) (*debug.BuildInfo, buildInfoStatus) {
	if len(b) < buildInfoHeaderSize {
		return nil, buildInfoMore
	}
	if b[15]&buildInfoInline == 0 {
		return nil, buildInfoNone // before Go 1.18: pointers, not read
	}
	vers, rest, err := varintString(b[buildInfoHeaderSize:], maxBuildVersion)
	if err != nil {
		return nil, statusOf(err)
	}
	mod, _, err := varintString(rest, maxBuildModInfo)
	if err != nil {
		return nil, statusOf(err)
	}
	if vers == "" {
		return nil, buildInfoNone
	}
	// The module list is framed by 16-byte sentinels, as written by cmd/go.
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	info, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return nil, buildInfoNone
	}
	info.GoVersion = vers
	return info, buildInfoFound
}

func statusOf(err error) buildInfoStatus {
	if errors.Is(err, errBuildInfoShort) {
		return buildInfoMore
	}
	return buildInfoNone
}

var errBuildInfoBad = errors.New("not build information")

// varintString reads a string prefixed by its length as a varint, of at
// most limit bytes, from the start of b.
func varintString(b []byte, limit uint64) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	switch {
	case k == 0:
		if len(b) >= binary.MaxVarintLen64 {
			return "", nil, errBuildInfoBad
		}
		return "", nil, errBuildInfoShort
	case k < 0, n > limit:
		return "", nil, errBuildInfoBad
	case uint64(len(b)-k) < n:
		return "", nil, errBuildInfoShort
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

// Program is what a provider package's executable says about how it was
// built: the Go build information `go version -m` prints.
type Program struct {
	// Executable is the archive entry read as the provider's program
	// (named terraform-provider-*), "" when the archive has none.
	Executable string
	// Info is its Go build information: nil when it is not a Go
	// program, or one built before Go 1.18.
	Info *debug.BuildInfo
}

// isProgramEntry says whether an archive entry is a provider's
// executable, the one whose build information is read.
func isProgramEntry(name string) bool {
	return strings.HasPrefix(path.Base(name), "terraform-provider-") && !strings.HasSuffix(name, "/")
}

// programScan reads the build information of the first provider
// executable of an archive that has one, entry by entry in archive order.
type programScan struct {
	scan    BuildInfoScanner
	program Program
}

// writerFor returns the writer entry name's content should also go to,
// nil when it need not be read.
func (p *programScan) writerFor(name string) io.Writer {
	if p.program.Info != nil || !isProgramEntry(name) {
		return nil
	}
	p.scan.Reset()
	return &p.scan
}

// entryDone notes what the scan of entry name found.
func (p *programScan) entryDone(name string) {
	if p.program.Info != nil || !isProgramEntry(name) {
		return
	}
	if info := p.scan.Info(); info != nil {
		p.program = Program{Executable: name, Info: info}
	} else if p.program.Executable == "" {
		p.program.Executable = name
	}
}
