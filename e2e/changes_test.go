package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"
	"golang.org/x/net/html"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
)

// TestChangeRecordsEndToEnd: one build into a directory and a bucket
// (versitygw) writes the same change record, index and Atom feed into
// both; a second build writes nothing into either. Served by nginx, the
// feed parses with a real feed reader (gofeed), its entry's link,
// resolved against the feed's URL, gives the record with the digest the
// feed names; headless Chromium shows the record in the page's "Recent
// changes" section, linked; and a bundle carries the record to another
// mirror, whose import adds its own.
func TestChangeRecordsEndToEnd(t *testing.T) {
	chromium := chromiumBin(t)
	f := newBucketFixture(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	env := append(slices.Clone(f.env), srv.Environ()...)
	site := filepath.Join(f.work, "site")
	uri := srv.URI(s3Bucket, s3Prefix)
	build := func() {
		t.Helper()
		if stdout, stderr, code := runTfmirror(t, f.work, env, "build", "--config", "mirror.hcl", "--out", "site", "--out", uri); code != 0 {
			t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
		}
	}
	build()
	idx := readChangeIndex(t, site)
	if len(idx.Records) != 1 || !strings.Contains(idx.Records[0].Summary, "tfmirror build --config --out: 2 added") {
		t.Fatalf("change index: %+v", idx)
	}
	record := idx.Records[0].Path
	for _, rel := range []string{record, layout.ChangeIndexPath, layout.ChangeFeedPath, "index.html"} {
		local, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if remote := getObject(t, srv, s3Bucket, s3Prefix+rel); string(remote) != string(local) {
			t.Errorf("%s differs between the directory and the bucket", rel)
		}
	}

	// A build that changes nothing writes nothing, in either.
	dirBefore, bucketBefore := treeHashes(t, site), listBucket(t, srv, s3Bucket, s3Prefix)
	changesBefore := changeFiles(t, site)
	build()
	if d := diffTrees(dirBefore, treeHashes(t, site)); d != "" || !slices.Equal(changesBefore, changeFiles(t, site)) {
		t.Errorf("a no-op build changed the directory:\n%s", d)
	}
	bucketAfter := listBucket(t, srv, s3Bucket, s3Prefix)
	for key, o := range bucketAfter {
		if strings.HasPrefix(key, ".tfmirror/") {
			continue
		}
		if was, ok := bucketBefore[key]; !ok || was != o {
			t.Errorf("a no-op build wrote %s into the bucket", key)
		}
	}

	// The feed through nginx, read by a feed reader.
	base := startNginxServer(t, site, f.ca, func(port int, certFile, keyFile, root string) string {
		block := defaultServerBlock(port, certFile, keyFile, root)
		return strings.Replace(block, "autoindex off;", "autoindex off;\n\t\ttypes { text/html html; application/json json; application/atom+xml atom; application/zip zip; }", 1)
	})
	feedURL := base + layout.ChangeFeedPath
	client := f.ca.Client()
	parser := gofeed.NewParser()
	parser.Client = client
	feed, err := parser.ParseURL(feedURL)
	if err != nil {
		t.Fatalf("parse %s: %v", feedURL, err)
	}
	if feed.FeedType != "atom" || len(feed.Items) != 1 {
		t.Fatalf("feed %s of %d items", feed.FeedType, len(feed.Items))
	}
	item := feed.Items[0]
	link := resolve(t, feedURL, item.Link)
	resp, err := client.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", link, resp.StatusCode, err)
	}
	sum := sha256.Sum256(data)
	if item.GUID != "urn:sha256:"+hex.EncodeToString(sum[:]) || !strings.Contains(item.Content, "added: registry.test/acme/baz 2.0.0 (darwin_arm64, linux_amd64)") {
		t.Errorf("feed entry %+v: the record it links to has sha256 %x", item, sum)
	}

	// The page, in Chromium.
	pageURL := base + "index.html"
	got := openInChromium(t, chromium, pageURL, "--ignore-certificate-errors")
	if len(got.console) > 0 {
		t.Errorf("chromium logged to the console:\n%s", strings.Join(got.console, "\n"))
	}
	section := findByAttr(got.dom, "id", "changes")
	if section == nil {
		t.Fatal("the page has no Recent changes section")
	}
	entry := findByAttr(section, "data-record", record)
	if entry == nil || !strings.Contains(domText(entry), "2 added") {
		t.Fatalf("the section does not show %s:\n%s", record, domText(section))
	}
	var hrefs []string
	for _, a := range domFind(entry, func(n *html.Node) bool { return n.Data == "a" }) {
		href, _ := domAttr(a, "href")
		hrefs = append(hrefs, resolve(t, pageURL, href))
	}
	if !slices.Contains(hrefs, base+record) {
		t.Errorf("the entry links to %q, not to %s", hrefs, base+record)
	}

	// Through a bundle.
	bundle := filepath.Join(t.TempDir(), "b.tar.gz")
	into := filepath.Join(t.TempDir(), "mirror")
	for _, args := range [][]string{{"bundle", "create", site, "--out", bundle}, {"bundle", "import", bundle, "--out", into}, {"verify", into}} {
		if stdout, stderr, code := runTfmirror(t, f.work, env, args...); code != 0 {
			t.Fatalf("tfmirror %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	imported := readChangeIndex(t, into)
	if len(imported.Records) != 2 || imported.Records[1].Path != record || !strings.HasPrefix(imported.Records[0].Summary, "tfmirror bundle import --out: 2 added") {
		t.Errorf("index of the importing mirror: %+v", imported)
	}
}

func readChangeIndex(t *testing.T, site string) layout.ChangeIndex {
	t.Helper()
	tree, err := layout.OpenExisting(site)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := tree.ReadChangeIndex(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if problems := tree.CheckChanges(t.Context()); len(problems) > 0 {
		t.Fatalf("change records of %s: %v", site, problems)
	}
	return idx
}

// changeFiles lists the change files of a directory with their content.
func changeFiles(t *testing.T, site string) []string {
	t.Helper()
	var out []string
	for _, rel := range []string{layout.ChangesDir, layout.ChangeFeedPath} {
		_ = filepath.WalkDir(filepath.Join(site, rel), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(p)
				out = append(out, p+"\n"+string(data))
			}
			return nil
		})
	}
	return out
}

// resolve resolves a link against the URL of the document it is in.
func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}
