package output

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestHeadline(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("the mirror has 2 problems"), "the mirror has 2 problems"},
		{fmt.Errorf("build failed:\n%w", errors.Join(errors.New("a: refused"), errors.New("b: refused"))), "build failed: a: refused; b: refused"},
		{fmt.Errorf("3 conflicts:\n  x: y\n  z: w"), "3 conflicts: x: y; z: w"},
		{fmt.Errorf("build failed:\n%w", errors.Join(context.Canceled, errors.New("record: context canceled"))), "interrupted"},
	} {
		if got := Headline(c.err); got != c.want {
			t.Errorf("Headline(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
