package htmlcatalog

import (
	"context"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

// RecentChanges is how many of the tree's change records (the newest)
// the page's "Recent changes" section shows; the Atom feed and
// changes/index.json hold more.
const RecentChanges = 10

// changeView is one change record as the page shows it.
type changeView struct {
	Path, Href, Sig string
	Time, Shown     string
	Summary         string
	Lines           []string
	Signed          bool
}

// changes reads the newest records from the tree's change index; an
// index that cannot be read is a problem the page lists, not a failure.
func (r *reader) changes(ctx context.Context, pg *page) {
	idx, err := r.tree.ReadChangeIndex(ctx)
	if err != nil {
		pg.Problems = append(pg.Problems, "recent changes: "+err.Error())
		return
	}
	for i, e := range idx.Records {
		if i == RecentChanges {
			break
		}
		cv := &changeView{
			Path: e.Path, Href: href(e.Path), Time: e.Time.UTC().Format(time.RFC3339), Shown: e.Time.UTC().Format("2006-01-02 15:04 UTC"),
			Summary: e.Summary, Lines: e.Lines, Signed: e.Signed,
		}
		if e.Signed {
			cv.Sig = href(e.Path + layout.ChangeSignatureSuffix)
		}
		pg.Changes = append(pg.Changes, cv)
	}
	if len(pg.Changes) > 0 {
		pg.Feed, pg.ChangeIndex = href(layout.ChangeFeedPath), href(layout.ChangeIndexPath)
	}
}
