package bundle

import (
	"errors"
	"fmt"

	"github.com/tfmirror/tfmirror/mirror"
)

// RefusedError means a check failed: on import, the bundle was refused
// (nothing was written to the destination); on create, the mirror to pack
// failed verification (no bundle was written). Problem paths are entry
// names of the bundle (mirror/..., manifest.json) or, on create, paths
// relative to the mirror.
//
// Problems holds at most maxShownProblems of them; when there were more,
// a last entry says how many more, and Omitted counts them.
type RefusedError struct {
	What     string // "bundle" or "mirror"
	Problems []mirror.Problem
	Omitted  int
}

// maxShownProblems is how many problems a RefusedError lists: a hostile
// bundle can have one for each of its files.
const maxShownProblems = 20

// refusedAll refuses what with every problem found, summarising past
// maxShownProblems.
func refusedAll(what string, problems []mirror.Problem) *RefusedError {
	e := &RefusedError{What: what, Problems: problems}
	if n := len(problems) - maxShownProblems; n > 0 {
		e.Problems = append(problems[:maxShownProblems:maxShownProblems], mirror.Problem{Path: "...", Message: fmt.Sprintf("and %d more problems, not listed", n)})
		e.Omitted = n
	}
	return e
}

// count is how many problems there were in all.
func (e *RefusedError) count() int {
	if e.Omitted > 0 {
		return len(e.Problems) - 1 + e.Omitted
	}
	return len(e.Problems)
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("the %s was refused, nothing was written", e.What)
	if e.What == "mirror" {
		msg = "the mirror cannot be bundled (import would refuse it), no bundle was written"
	}
	switch n := e.count(); n {
	case 0:
		return msg
	case 1:
		return fmt.Sprintf("%s: %s", msg, problemString(e.Problems[0]))
	default:
		return fmt.Sprintf("%s: %s (and %d more problems)", msg, problemString(e.Problems[0]), n-1)
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

// naming sets the path of the problems with none, which are the bundle
// file's own (a stream cut short, not gzip), to file.
func naming(err error, file string) error {
	var refused *RefusedError
	if errors.As(err, &refused) {
		for i := range refused.Problems {
			if refused.Problems[i].Path == "" {
				refused.Problems[i].Path = file
			}
		}
	}
	return err
}
