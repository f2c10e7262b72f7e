package bundle

import (
	"fmt"

	"github.com/tfmirror/tfmirror/mirror"
)

// RefusedError means a check failed: on import, the bundle was refused
// (nothing was written to the destination); on create, the mirror to pack
// failed verification (no bundle was written). Problem paths are entry
// names of the bundle (mirror/..., manifest.json) or, on create, paths
// relative to the mirror.
type RefusedError struct {
	What     string // "bundle" or "mirror"
	Problems []mirror.Problem
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("the %s was refused, nothing was written", e.What)
	if e.What == "mirror" {
		msg = "the mirror cannot be bundled (import would refuse it), no bundle was written"
	}
	switch len(e.Problems) {
	case 0:
		return msg
	case 1:
		return fmt.Sprintf("%s: %s", msg, problemString(e.Problems[0]))
	default:
		return fmt.Sprintf("%s: %s (and %d more problems)", msg, problemString(e.Problems[0]), len(e.Problems)-1)
	}
}

func refused(path, format string, args ...any) *RefusedError {
	return &RefusedError{What: "bundle", Problems: []mirror.Problem{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// problemString formats a problem as "path: message".
func problemString(p mirror.Problem) string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}
