package hashing

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// DefaultStreamBuffer is how many bytes a StreamHasher holds that it has
// not parsed yet, unless told otherwise: enough to smooth out the bursts
// of a download, small enough that eight downloads at once stay cheap.
const DefaultStreamBuffer = 256 << 10

// StreamOptions tune a StreamHasher. The zero value is ready to use.
type StreamOptions struct {
	// Buffer bounds the bytes written and not yet parsed; a Write waits
	// while it is full. 0 means DefaultStreamBuffer.
	Buffer int
	// Acquire and Release, if set (both or neither), bound the CPU it
	// takes: the parser holds what Acquire gives (a slot of a semaphore
	// shared with other hashing) only while it works on one read of the
	// buffer (at most 64 KiB of the archive), gives it back with Release
	// and queues again for the next, so that the archives hashed at once
	// take turns and none waits long. An error from Acquire makes it give
	// up.
	Acquire func() error
	Release func()
}

// StreamEntry is one entry of a zip as its local file header and its data
// described it while it streamed by.
type StreamEntry struct {
	Name             string
	Method           uint16
	Flags            uint16
	HeaderOffset     int64 // of its local file header
	DataOffset       int64 // of its (compressed) data
	CRC32            uint32
	CompressedSize   uint64 // bytes of data, as consumed
	UncompressedSize uint64
	SHA256           [sha256.Size]byte
}

// StreamResult is what a StreamHasher made of the bytes it was fed.
type StreamResult struct {
	// Complete says that every entry was followed, up to the central
	// directory (at offset Directory). Otherwise Reason says why it gave
	// up, and the entries are of no use.
	Complete  bool
	Reason    string
	Entries   []StreamEntry
	Directory int64
	// Program is what the package's executable says it was built
	// from, read from its bytes as they were inflated.
	Program Program
	// Summarized is set by HashArchiveStreamed when the archive's h1:
	// hashes came from Entries; Mismatch says why they did not.
	Summarized bool
	Mismatch   string
}

// A StreamHasher hashes the entries of a zip archive while its bytes
// arrive, so that its h1: hashes are ready when the download ends rather
// than after a second pass over the file. Write the archive's bytes to it
// in order; Close then gives a StreamResult for HashArchiveStreamed, which
// uses it only if it agrees in every detail with the archive's central
// directory, and hashes the file otherwise.
//
// It reads the local file headers in order and inflates and hashes each
// entry's data as it arrives, with bounded memory (never a whole entry),
// in a goroutine of its own so that writes return quickly. It gives up,
// silently, on whatever it cannot follow: data descriptors after stored
// entries (their length is unknown), encryption, methods other than
// store and deflate, ZIP64 fields, bytes that are not a local header,
// more entries or bytes than the limits; and when told to with Abandon.
// Giving up costs only the speed: the file is then hashed as before.
//
// Write, Reset, Abandon and Close must not be called concurrently.
type StreamHasher struct {
	limits ZipLimits
	opts   StreamOptions
	cur    *streamRun // nil before the first byte
	reason string     // set by Abandon
	closed bool
}

// streamRun is one pass of the parser over the bytes since the last Reset.
type streamRun struct {
	p    *pipe
	done chan struct{} // closed when res is set
	res  *StreamResult
}

// NewStreamHasher returns a StreamHasher that enforces limits.
func NewStreamHasher(limits ZipLimits, opts StreamOptions) *StreamHasher {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultStreamBuffer
	}
	return &StreamHasher{limits: limits, opts: opts}
}

// Write feeds the next bytes of the archive. It never fails, and returns
// once p is buffered, which may wait for the parser to catch up.
func (s *StreamHasher) Write(p []byte) (int, error) {
	if s.closed || s.reason != "" || len(p) == 0 {
		return len(p), nil
	}
	if s.cur == nil {
		s.cur = &streamRun{p: newPipe(s.opts), done: make(chan struct{})}
		go s.cur.run(s.limits)
	}
	s.cur.p.write(p)
	return len(p), nil
}

// Reset starts over: the next byte written is the archive's first.
func (s *StreamHasher) Reset() {
	s.stop()
	s.cur = nil
}

// Abandon gives up for good, for reason: for instance because the bytes
// written so far are not all the archive's (a resumed download).
func (s *StreamHasher) Abandon(reason string) {
	if s.reason == "" {
		s.reason = reason
	}
	s.stop()
}

// stop makes the current parser, if any, end without waiting for it.
func (s *StreamHasher) stop() {
	if s.cur != nil {
		s.cur.p.abort(errStopped)
	}
}

var errStopped = errors.New("stopped")

// Close ends the input, waits for the parser to finish with what it holds,
// and returns its result. Later writes are ignored.
func (s *StreamHasher) Close() *StreamResult {
	s.closed = true
	switch {
	case s.reason != "":
		return &StreamResult{Reason: s.reason}
	case s.cur == nil:
		return &StreamResult{Reason: "no bytes were written"}
	}
	s.cur.p.close()
	<-s.cur.done
	return s.cur.res
}

// run parses the pipe's bytes and records the result.
func (r *streamRun) run(limits ZipLimits) {
	defer close(r.done)
	res := parseStream(r.p, limits)
	r.p.finish()
	r.res = res
}

// pipe is a bounded buffer between the writer and the parser. Once the
// parser has finished, writes are dropped. It also holds the parser's
// Acquire slot, given back while it waits for bytes.
type pipe struct {
	mu      sync.Mutex
	cond    sync.Cond
	buf     []byte // ring of bytes not yet read
	start   int    // of the oldest byte in buf
	n       int    // bytes in buf
	size    int
	closed  bool  // no more writes: the reader gets io.EOF once buf is empty
	done    bool  // the reader has finished: writes are dropped
	err     error // set by abort: returned to the reader
	acquire func() error
	release func()
	held    bool // the reader holds a slot
}

func newPipe(opts StreamOptions) *pipe {
	p := &pipe{size: opts.Buffer, acquire: opts.Acquire, release: opts.Release}
	p.cond.L = &p.mu
	return p
}

func (p *pipe) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf == nil && !p.done {
		p.buf = make([]byte, p.size)
	}
	for len(b) > 0 && !p.done && p.err == nil {
		if p.n == len(p.buf) {
			p.cond.Wait()
			continue
		}
		end := (p.start + p.n) % len(p.buf)
		free := len(p.buf) - p.n
		if end+free > len(p.buf) {
			free = len(p.buf) - end // up to the end of the ring first
		}
		c := copy(p.buf[end:end+free], b)
		p.n += c
		b = b[c:]
		p.cond.Broadcast()
	}
}

// Read gives the parser the oldest bytes, waiting for some. The parser
// holds a slot only while it works on what one Read returned: Read gives
// it back first and takes its turn again once there are bytes, so that
// the archives hashed at once share the slots.
func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		p.mu.Unlock()
		p.giveBack()
		p.mu.Lock()
	}
	for {
		if p.err != nil {
			return 0, p.err
		}
		if p.n == 0 {
			if p.closed {
				return 0, io.EOF
			}
			p.cond.Wait()
			continue
		}
		if !p.held && p.acquire != nil {
			p.mu.Unlock()
			err := p.acquire()
			p.mu.Lock()
			if err != nil {
				return 0, err
			}
			p.held = true
			continue // the state may have changed meanwhile
		}
		c := copy(b, p.buf[p.start:min(p.start+p.n, len(p.buf))])
		p.start = (p.start + c) % len(p.buf)
		p.n -= c
		p.cond.Broadcast()
		return c, nil
	}
}

func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *pipe) abort(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// finish ends the reader's use of p: later and waiting writes are dropped,
// the buffer is freed and the slot given back.
func (p *pipe) finish() {
	p.mu.Lock()
	p.done = true
	p.buf = nil
	p.n = 0
	held := p.held
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
	if held {
		p.giveBack()
	}
}

func (p *pipe) giveBack() {
	if p.release != nil {
		p.release()
	}
}

// Zip record signatures and flags (APPNOTE.TXT).
const (
	localHeaderSignature     = 0x04034b50
	centralHeaderSignature   = 0x02014b50
	endOfDirectorySignature  = 0x06054b50
	dataDescriptorSignature  = 0x08074b50
	localHeaderLen           = 30
	zip64ExtraID             = 0x0001
	flagEncrypted            = 1 << 0
	flagDataDescriptor       = 1 << 3
	flagStrongEncryption     = 1 << 6
	flagMaskedLocalHeader    = 1 << 13
	unsupportedFlags         = flagEncrypted | flagStrongEncryption | flagMaskedLocalHeader
	streamReadBufferSize     = 64 << 10
	maxUint32                = 1<<32 - 1
	dataDescriptorHeaderLen  = 4
	dataDescriptorBodyLen    = 12
	zipMethodStore           = uint16(zip.Store)
	zipMethodDeflate         = uint16(zip.Deflate)
	centralDirectoryNotFound = "the archive ends before its central directory"
)

// streamParser follows the local headers of one archive.
type streamParser struct {
	in     *countingReader
	br     *bufio.Reader
	out    entryWriter
	buf    []byte // for stored entries
	limits ZipLimits
	left   uint64 // of MaxUnpackedBytes
	prog   programScan
}

// parseStream reads r, an archive from its first byte, up to its central
// directory.
func parseStream(r io.Reader, limits ZipLimits) *StreamResult {
	in := &countingReader{r: r}
	sp := &streamParser{in: in, br: bufio.NewReaderSize(in, streamReadBufferSize), limits: limits,
		left: uint64(max(limits.MaxUnpackedBytes, 0))}
	sp.out.sha = sha256.New()
	sp.out.crc = crc32.NewIEEE()
	res := &StreamResult{}
	for {
		e, end, err := sp.next(len(res.Entries))
		if err != nil {
			return &StreamResult{Reason: err.Error()}
		}
		if end {
			res.Complete, res.Directory = true, e.HeaderOffset
			res.Program = sp.prog.program
			return res
		}
		res.Entries = append(res.Entries, e)
	}
}

// pos is the offset in the archive of the next byte to parse.
func (sp *streamParser) pos() int64 { return sp.in.n - int64(sp.br.Buffered()) }

// next follows the next entry, or finds the central directory (end).
func (sp *streamParser) next(seen int) (e StreamEntry, end bool, err error) {
	e.HeaderOffset = sp.pos()
	var h [localHeaderLen]byte
	if _, err := io.ReadFull(sp.br, h[:4]); err != nil {
		return e, false, sp.readError(err)
	}
	switch binary.LittleEndian.Uint32(h[:4]) {
	case centralHeaderSignature, endOfDirectorySignature:
		return e, true, nil
	case localHeaderSignature:
	default:
		return e, false, fmt.Errorf("no local file header at byte %d", e.HeaderOffset)
	}
	if seen >= sp.limits.MaxEntries {
		return e, false, fmt.Errorf("more than the limit of %d entries", sp.limits.MaxEntries)
	}
	if _, err := io.ReadFull(sp.br, h[4:]); err != nil {
		return e, false, sp.readError(err)
	}
	e.Flags = binary.LittleEndian.Uint16(h[6:])
	e.Method = binary.LittleEndian.Uint16(h[8:])
	csize := binary.LittleEndian.Uint32(h[18:])
	usize := binary.LittleEndian.Uint32(h[22:])
	nameLen := int(binary.LittleEndian.Uint16(h[26:]))
	extraLen := int(binary.LittleEndian.Uint16(h[28:]))
	name := make([]byte, nameLen+extraLen)
	if _, err := io.ReadFull(sp.br, name); err != nil {
		return e, false, sp.readError(err)
	}
	e.Name = string(name[:nameLen])
	descriptor := e.Flags&flagDataDescriptor != 0
	switch {
	case e.Flags&unsupportedFlags != 0:
		return e, false, fmt.Errorf("entry %s is encrypted", excerpt.Quote(e.Name))
	case e.Method != zipMethodStore && e.Method != zipMethodDeflate:
		return e, false, fmt.Errorf("entry %s has compression method %d", excerpt.Quote(e.Name), e.Method)
	case descriptor && e.Method == zipMethodStore:
		return e, false, fmt.Errorf("stored entry %s has a data descriptor: its length is unknown", excerpt.Quote(e.Name))
	case hasZip64(name[nameLen:]) || (!descriptor && (csize == maxUint32 || usize == maxUint32)):
		return e, false, fmt.Errorf("entry %s has ZIP64 fields", excerpt.Quote(e.Name))
	}
	e.DataOffset = sp.pos()

	budget := sp.left
	if !descriptor {
		if uint64(usize) > sp.left {
			return e, false, sp.tooLarge()
		}
		budget = uint64(usize)
	}
	sp.out.reset(budget, sp.prog.writerFor(e.Name))
	if e.Method == zipMethodStore {
		if csize != usize {
			return e, false, fmt.Errorf("stored entry %s has %d bytes unpacked and %d packed", excerpt.Quote(e.Name), usize, csize)
		}
		if sp.buf == nil {
			sp.buf = make([]byte, 32<<10)
		}
		if _, err := io.CopyBuffer(&sp.out, io.LimitReader(sp.br, int64(csize)), sp.buf); err != nil {
			return e, false, sp.dataError(e, err)
		}
	} else if err := sp.inflate(); err != nil {
		return e, false, sp.dataError(e, err)
	}
	e.CompressedSize = uint64(sp.pos() - e.DataOffset)
	e.UncompressedSize = sp.out.n
	e.CRC32 = sp.out.crc.Sum32()
	sp.out.sha.Sum(e.SHA256[:0])
	sp.prog.entryDone(e.Name)

	if !descriptor {
		if e.CompressedSize != uint64(csize) || e.UncompressedSize != uint64(usize) {
			return e, false, fmt.Errorf("entry %s is not the length its local header says", excerpt.Quote(e.Name))
		}
	} else if err := sp.descriptor(e); err != nil {
		return e, false, err
	}
	sp.left -= e.UncompressedSize
	return e, false, nil
}

// inflate decompresses one Deflate stream from the archive into sp.out,
// reading exactly its bytes from sp.br.
func (sp *streamParser) inflate() error {
	return inflateTo(&sp.out, sp.br)
}

// descriptor reads the data descriptor after e's data, as archive/zip
// does (with or without its signature), and requires it to describe
// exactly the data that was read.
func (sp *streamParser) descriptor(e StreamEntry) error {
	var d [dataDescriptorHeaderLen + dataDescriptorBodyLen]byte
	if _, err := io.ReadFull(sp.br, d[:4]); err != nil {
		return sp.readError(err)
	}
	body := d[:dataDescriptorBodyLen]
	if binary.LittleEndian.Uint32(d[:4]) == dataDescriptorSignature {
		body = d[4:]
		if _, err := io.ReadFull(sp.br, body); err != nil {
			return sp.readError(err)
		}
	} else if _, err := io.ReadFull(sp.br, body[4:]); err != nil {
		return sp.readError(err)
	}
	crc := binary.LittleEndian.Uint32(body)
	csize := binary.LittleEndian.Uint32(body[4:])
	usize := binary.LittleEndian.Uint32(body[8:])
	if crc != e.CRC32 || uint64(csize) != e.CompressedSize || uint64(usize) != e.UncompressedSize {
		return fmt.Errorf("the data descriptor of entry %s does not describe its data", excerpt.Quote(e.Name))
	}
	return nil
}

func (sp *streamParser) tooLarge() error {
	return fmt.Errorf("unpacks to more than the limit of %d bytes", sp.limits.MaxUnpackedBytes)
}

func (sp *streamParser) readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New(centralDirectoryNotFound)
	}
	return err
}

func (sp *streamParser) dataError(e StreamEntry, err error) error {
	if errors.Is(err, errEntryTooLarge) {
		if e.Flags&flagDataDescriptor != 0 {
			return sp.tooLarge()
		}
		return fmt.Errorf("entry %s unpacks to more than its local header says", excerpt.Quote(e.Name))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return sp.readError(err)
	}
	return fmt.Errorf("read entry %s: %w", excerpt.Quote(e.Name), err)
}

// hasZip64 says whether the extra fields hold a ZIP64 one.
func hasZip64(extra []byte) bool {
	for len(extra) >= 4 {
		id := binary.LittleEndian.Uint16(extra)
		size := int(binary.LittleEndian.Uint16(extra[2:]))
		if id == zip64ExtraID {
			return true
		}
		extra = extra[min(4+size, len(extra)):]
	}
	return false
}

// countingReader counts the bytes read.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

var errEntryTooLarge = errors.New("entry larger than allowed")

// entryWriter hashes an entry's content (SHA-256, and CRC-32 when crc is
// set) and refuses more than max bytes.
type entryWriter struct {
	sha hash.Hash
	crc hash.Hash32
	n   uint64
	max uint64
	tee io.Writer // also sees the content, when set; never fails
}

func (w *entryWriter) reset(limit uint64, tee io.Writer) {
	w.sha.Reset()
	if w.crc != nil {
		w.crc.Reset()
	}
	w.n, w.max, w.tee = 0, limit, tee
}

func (w *entryWriter) Write(p []byte) (int, error) {
	if uint64(len(p)) > w.max-w.n {
		return 0, errEntryTooLarge
	}
	w.n += uint64(len(p))
	_, _ = w.sha.Write(p) // never fails
	if w.crc != nil {
		_, _ = w.crc.Write(p)
	}
	if w.tee != nil {
		_, _ = w.tee.Write(p)
	}
	return len(p), nil
}

// streamedSums returns the SHA-256 of every entry of files, the central
// directory of an archive, from res, if res followed exactly those
// entries: the same number, in the same order, each with the same name,
// method, data descriptor flag, data offset, CRC-32 and sizes. Then
// archive/zip reads each entry's data from the very bytes the parser
// inflated, with the same method, and checks it against the same CRC-32
// and sizes: it would find the same content. Otherwise it says why not.
func streamedSums(files []*zip.File, res *StreamResult) (map[string][sha256.Size]byte, string) {
	switch {
	case res == nil:
		return nil, "not streamed"
	case !res.Complete:
		return nil, "the stream was not followed: " + res.Reason
	case len(res.Entries) != len(files):
		return nil, fmt.Sprintf("%d entries streamed, %d in the central directory", len(res.Entries), len(files))
	}
	sums := make(map[string][sha256.Size]byte, len(files))
	for i, f := range files {
		e := res.Entries[i]
		off, err := f.DataOffset()
		switch {
		case err != nil:
			return nil, fmt.Sprintf("entry %d: %v", i, err)
		case f.Name != e.Name:
			return nil, fmt.Sprintf("entry %d is %s in the central directory, %s in its local header", i, excerpt.Quote(f.Name), excerpt.Quote(e.Name))
		case f.Method != e.Method,
			f.Flags&(flagDataDescriptor|unsupportedFlags) != e.Flags&(flagDataDescriptor|unsupportedFlags),
			off != e.DataOffset,
			f.CRC32 != e.CRC32,
			f.CompressedSize64 != e.CompressedSize,
			f.UncompressedSize64 != e.UncompressedSize,
			// A directory's content is not read, only its size checked.
			strings.HasSuffix(f.Name, "/") && e.UncompressedSize != 0:
			return nil, fmt.Sprintf("entry %s: the central directory and the stream disagree", excerpt.Quote(f.Name))
		}
		sums[f.Name] = e.SHA256
	}
	return sums, ""
}
