//go:build !linux

package layout

import (
	"errors"
	"os"
)

// oNoFollow is not needed for safety here: O_CREATE|O_EXCL already refuses
// to open an existing name, symbolic links included.
const oNoFollow = 0

// renameExchange is not available outside Linux: InstallPackageDir falls
// back to two renames.
func renameExchange(from, to string) error {
	return &os.LinkError{Op: "exchange", Old: from, New: to, Err: errors.ErrUnsupported}
}
