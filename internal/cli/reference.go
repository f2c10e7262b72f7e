package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

//go:generate go run ./gendocs ../../docs/cli

// ReferenceHeader opens every page of the command reference.
const ReferenceHeader = "<!-- Generated from tfmirror's command tree by `go generate ./internal/cli`: do not edit. -->\n\n"

// WriteReference writes the command reference into dir, one markdown page
// per command (tfmirror.md, tfmirror_build.md, ...), linked to each other
// by relative links. The pages that were there are removed first, so a
// command that is gone loses its page. The output depends only on the
// command tree: no date, no machine.
func WriteReference(dir string) error {
	old, err := filepath.Glob(filepath.Join(dir, "tfmirror*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("remove stale page: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The commands are never run: the tree is built only for its help.
	root := newRootCmd(Env{run: &commands{}})
	// What cobra adds when the command line runs, shown as --help shows it.
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	var noDate func(*cobra.Command)
	noDate = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noDate(sub)
		}
	}
	noDate(root)
	header := func(string) string { return ReferenceHeader }
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dir, header, link); err != nil {
		return fmt.Errorf("write command reference: %w", err)
	}
	return nil
}
