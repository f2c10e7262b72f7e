package layout

import (
	"encoding/xml"
	"strings"
	"time"
)

// FeedEntries is how many of the index's records the Atom feed carries,
// newest first.
const FeedEntries = 50

// atomFeed is an Atom feed (RFC 4287) as ChangeFeed writes it.
type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Updated   string      `xml:"updated"`
	Author    atomAuthor  `xml:"author"`
	Generator string      `xml:"generator"`
	Links     []atomLink  `xml:"link"`
	Entries   []atomEntry `xml:"entry"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomEntry struct {
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Updated string      `xml:"updated"`
	Links   []atomLink  `xml:"link"`
	Content atomContent `xml:"content"`
}

type atomContent struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

// ChangeFeed renders the Atom feed of the index's newest FeedEntries
// records. Its links are relative to the feed's own address (the tree's
// root), which feed readers resolve; an entry's id is its record's digest,
// so it never changes. The same index gives the same bytes.
func ChangeFeed(idx ChangeIndex) ([]byte, error) {
	f := atomFeed{
		ID: idx.Feed, Title: "Changes of the mirror", Author: atomAuthor{Name: "tfmirror"}, Generator: "tfmirror",
		Links: []atomLink{{Rel: "self", Type: "application/atom+xml", Href: ChangeFeedPath}, {Rel: "alternate", Type: "text/html", Href: "index.html"}},
	}
	for i, e := range idx.Records {
		if i == FeedEntries {
			break
		}
		if i == 0 {
			f.Updated = atomTime(e.Time)
		}
		f.Entries = append(f.Entries, atomEntry{
			ID: "urn:sha256:" + e.SHA256, Title: e.Summary, Updated: atomTime(e.Time),
			Links:   []atomLink{{Rel: "alternate", Type: "application/json", Href: e.Path}},
			Content: atomContent{Type: "text", Text: strings.Join(e.Lines, "\n")},
		})
	}
	data, err := xml.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(data, '\n')...), nil
}

func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
