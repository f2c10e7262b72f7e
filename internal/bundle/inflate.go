package bundle

import (
	"errors"
	"fmt"
	"io"
)

// blockSize is the tar format's unit: headers and padded file contents.
const blockSize = 512

// Bounds on how far a bundle may decompress beyond what it declares.
const (
	// inflationFloor is what a bundle may decompress to whatever its
	// compressed size.
	inflationFloor = 64 << 20
	// maxInflation is the largest ratio of decompressed to compressed
	// bytes past inflationFloor. Provider archives are compressed
	// already (a bundle of them is about 1:1); a stored, uncompressed
	// binary compresses about 4:1.
	maxInflation = 50
)

// Errors of a bundle that decompresses to more than it may; Import
// refuses it.
var (
	errUndeclared = errors.New("decompresses to more than its manifest declares (a compression bomb?)")
	errInflation  = fmt.Errorf("decompresses to more than %d times its size (a compression bomb?)", maxInflation)
)

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// inflation stops a decompressed stream at limit bytes, and once it is
// past inflationFloor, at maxInflation times the compressed bytes read.
type inflation struct {
	r          io.Reader // the decompressed stream
	compressed *counter  // what it is decompressed from
	n, limit   int64
}

func (b *inflation) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		return 0, errUndeclared
	}
	if int64(len(p)) > b.limit-b.n {
		p = p[:b.limit-b.n]
	}
	k, err := b.r.Read(p)
	b.n += int64(k)
	if b.n > inflationFloor && b.n/maxInflation > b.compressed.n {
		return k, errInflation
	}
	return k, err
}

// declare sets the limit to what has been read plus rest.
func (b *inflation) declare(rest int64) { b.limit = b.n + rest }

// isInflation reports the errors of an inflation.
func isInflation(err error) bool {
	return errors.Is(err, errUndeclared) || errors.Is(err, errInflation)
}

// roundUp rounds n up to a whole number of tar blocks.
func roundUp(n int64) int64 { return (n + blockSize - 1) / blockSize * blockSize }

// entryBytes is the most the tar format may take for an entry named name
// with size bytes of content: its header, a PAX header holding a long
// name, and the content padded to whole blocks.
func entryBytes(name string, size int64) int64 {
	return 3*blockSize + roundUp(int64(len(name))) + roundUp(size)
}

// manifestBound is what a bundle may decompress to before its manifest
// is read.
func manifestBound() int64 { return entryBytes(ManifestName, maxManifestBytes) }

// declaredRest is what a bundle may decompress to after its manifest's
// content: the manifest's padding, the signature, every listed file and
// directory, the end of the archive and the trailing padding accepted.
func declaredRest(m Manifest, dirs map[string]bool) int64 {
	n := blockSize + entryBytes(SignatureName, maxSignatureBytes)
	for _, f := range m.Files {
		n += entryBytes(f.Path, f.Size)
	}
	for d := range dirs {
		n += entryBytes(d+"/", 0)
	}
	return n + 2*blockSize + maxTrailingBytes
}
