package ocistore

import (
	"errors"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// tfmirror's own conflict lines stay lines (a tag that names another
// package); what a registry says is still escaped.
func TestExplainKeepsConflictLines(t *testing.T) {
	s := &Store{}
	conflict := &layout.ConflictError{Conflicts: []layout.Conflict{{Path: "reg/tf/x:1.0.0", Message: "the tag names another package"}}}
	p := addrs.MustParseProvider("hashicorp/x")
	err := s.explain(&Error{Op: "push", Provider: p, Version: "1.0.0", Repository: "reg/tf/x"}, conflict)
	if msg := err.Error(); strings.Contains(msg, `\n`) || !strings.Contains(msg, "\n  reg/tf/x:1.0.0: the tag names another package") {
		t.Errorf("explain of a conflict = %q", msg)
	}
	if !errors.As(err, new(*layout.ConflictError)) {
		t.Error("the conflict is no longer a ConflictError")
	}
	err = s.explain(&Error{Op: "push", Provider: p, Version: "1.0.0", Repository: "reg/tf/x"}, errors.New("registry says\nline two"))
	if strings.Contains(err.Error(), "\nline two") {
		t.Errorf("a registry's text was not escaped: %q", err.Error())
	}
}
