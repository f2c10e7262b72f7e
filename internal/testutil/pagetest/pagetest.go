// Package pagetest reads tfmirror's catalog page (index.html) as tests
// compare it: the parts that differ between two builds of the same
// packages made at other times (the "Recent changes" section, which shows
// each build's change record) taken out. It knows the page's markup only,
// imports nothing of tfmirror, and decides nothing about what the page
// holds.
package pagetest

import "strings"

// WithoutChanges is page without its "Recent changes" section and that
// section's entry in the contents; page itself when it has none.
func WithoutChanges(page string) string {
	page = strings.Replace(page, "\n<li><a href=\"#changes\">Recent changes</a></li>", "", 1)
	start := strings.Index(page, "\n\n<section id=\"changes\">")
	if start < 0 {
		return page
	}
	end := strings.Index(page[start:], "</section>")
	if end < 0 {
		return page
	}
	return page[:start] + page[start+end+len("</section>"):]
}
