package atomicfile_test

import (
	"io/fs"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// TypeName says what hashing.TypeName says: every refusal of a file that
// is not a regular one describes it the same way, whichever package
// refused it.
func TestTypeNameIsHashings(t *testing.T) {
	modes := []fs.FileMode{
		0, fs.ModeDir, fs.ModeSymlink, fs.ModeNamedPipe, fs.ModeSocket,
		fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice, fs.ModeIrregular,
		fs.ModeSymlink | fs.ModeDir,
	}
	for _, m := range modes {
		if got, want := atomicfile.TypeName(m), hashing.TypeName(m); got != want {
			t.Errorf("TypeName(%v) = %q, hashing.TypeName = %q", m, got, want)
		}
	}
}
