package output

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/views"
)

// LockFiles says which lock files were written and which were already
// up to date.
func (p *Printer) LockFiles(files []app.LockFile) {
	for _, f := range files {
		if f.Unchanged {
			p.Line("unchanged " + f.Path)
			continue
		}
		p.Line(fmt.Sprintf("wrote     %s (%d providers)", f.Path, f.Providers))
	}
}

// Views says what refreshing a tree's views wrote and how clients use it.
func (p *Printer) Views(r *views.Report) {
	for _, line := range r.Lines() {
		p.Line(line)
	}
}
