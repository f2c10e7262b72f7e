//go:build !linux

package layout

// oNoFollow is not needed for safety here: O_CREATE|O_EXCL already refuses
// to open an existing name, symbolic links included.
const oNoFollow = 0
