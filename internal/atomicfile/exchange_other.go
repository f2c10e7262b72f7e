//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// RenameExchange is not available outside Linux: it fails with an error
// IsExchangeUnsupported recognizes, and the caller falls back to two
// renames.
func RenameExchange(from, to string) error {
	return &os.LinkError{Op: "exchange", Old: from, New: to, Err: errors.ErrUnsupported}
}
