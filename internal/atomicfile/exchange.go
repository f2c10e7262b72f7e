package atomicfile

import (
	"errors"
	"syscall"
)

// IsExchangeUnsupported reports whether err, from RenameExchange, says the
// system or filesystem cannot do renameat2(RENAME_EXCHANGE), rather than
// that the exchange itself failed.
func IsExchangeUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, errors.ErrUnsupported)
}
