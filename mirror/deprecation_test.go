package mirror

import (
	"context"
	"slices"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// warningSource is a fakeSource whose version lists carry warnings, as a
// provider registry's do.
type warningSource struct {
	*fakeSource
	warnings map[string][]string // by provider
}

func (s warningSource) ProviderListing(ctx context.Context, p addrs.Provider) (Listing, error) {
	vs, err := s.AvailableVersions(ctx, p)
	return Listing{Releases: unlisted(vs), Warnings: s.warnings[p.String()], CanWarn: true}, err
}

// A build reports the warnings of each provider whose version list has a
// place for them: an event for each that warns, and every such provider
// in the report (none for one means no warnings now). A route to an
// upstream that cannot say (a network mirror) says nothing.
func TestBuildReportsDeprecations(t *testing.T) {
	src := newFakeSource()
	src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	src.add("hashicorp/bar", "1.0.0", "linux_amd64")
	src.add("hashicorp/baz", "1.0.0", "linux_amd64")
	foo, bar := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseProvider("hashicorp/bar")
	ws := warningSource{fakeSource: src, warnings: map[string][]string{foo.String(): {"deprecated", "use acme/foo"}}}
	routed := &RoutedSource{Routes: []Route{
		{Name: "network_mirror A", Include: []string{"registry.opentofu.org/hashicorp/baz"}, Source: src},
		{Name: "direct", Source: ws},
	}}
	tree, err := layout.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var events []Deprecation
	b := &Builder{Source: routed, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: Options{
		OnEvent: func(e Event) {
			if e.Deprecation != nil {
				events = append(events, *e.Deprecation)
			}
		},
	}}
	r := b.Build(context.Background(), []Requirement{
		requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"), requirement(t, "hashicorp/foo", ">= 1.0.0", "linux_amd64"),
		requirement(t, "hashicorp/bar", "1.0.0", "linux_amd64"), requirement(t, "hashicorp/baz", "1.0.0", "linux_amd64"),
	})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Provider != foo || !slices.Equal(events[0].Warnings, []string{"deprecated", "use acme/foo"}) {
		t.Errorf("events %+v, want one for foo", events)
	}
	want := []Deprecation{{Provider: bar}, {Provider: foo, Warnings: []string{"deprecated", "use acme/foo"}}}
	if len(r.Deprecations) != 2 || r.Deprecations[0].Provider != want[0].Provider || r.Deprecations[0].Warnings != nil ||
		r.Deprecations[1].Provider != want[1].Provider || !slices.Equal(r.Deprecations[1].Warnings, want[1].Warnings) {
		t.Errorf("report deprecations %+v, want %+v (baz, behind a network mirror, not at all)", r.Deprecations, want)
	}
	if got := events[0].Describe(); got != "registry.opentofu.org/hashicorp/foo: the registry warns: deprecated; use acme/foo" {
		t.Errorf("Describe = %q", got)
	}
	if got := (Deprecation{Provider: foo, Warnings: []string{"a\x1b[2Jb\n"}}).Describe(); got != `registry.opentofu.org/hashicorp/foo: the registry warns: a\x1b[2Jb\n` {
		t.Errorf("Describe of hostile text = %q", got)
	}
}
