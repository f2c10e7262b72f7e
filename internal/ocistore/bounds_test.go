package ocistore_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/hostileoci"
	"github.com/tfmirror/tfmirror/internal/testutil/notifytest"
)

// hostileStore pushes hashicorp/foo 1.0.0 into a real registry and opens
// it through a hostile proxy, with cfg's bounds.
func hostileStore(t *testing.T, cfg ocistore.Config) (*ocistore.Store, *hostileoci.Proxy) {
	t.Helper()
	srv, _, _ := pushedFoo(t)
	proxy := hostileoci.Start(t, srv.CA, srv.URL())
	cfg.Environ = []string{
		"SSL_CERT_FILE=" + srv.CAFile, "HOME=" + t.TempDir(),
		ocistore.EnvUsername + "=" + srv.Username, ocistore.EnvPassword + "=" + srv.Password,
	}
	s, err := ocistore.New(t.Context(), "oci://"+proxy.Host+"/tf/${hostname}/${namespace}/${type}", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, proxy
}

// A tag list whose pages always have a next one stops at the bound on
// pages, or on tags, with an error naming the provider, the repository
// and the bound.
func TestEndlessTagList(t *testing.T) {
	foo := addrs.MustParseProvider("hashicorp/foo")
	for _, tt := range []struct {
		name  string
		cfg   ocistore.Config
		pages int64
		want  string
	}{
		{"pages", ocistore.Config{MaxListPages: 5}, 5, "the tag list goes on past 5 pages (5000 tags so far"},
		{"tags", ocistore.Config{MaxTags: 2500}, 3, "the tag list goes on past 2500 tags"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, proxy := hostileStore(t, tt.cfg)
			proxy.Set(hostileoci.EndlessTags)
			_, err := s.Versions(t.Context(), foo)
			if !errors.Is(err, ocistore.ErrListTooLong) {
				t.Fatalf("Versions: %v, want ErrListTooLong", err)
			}
			for _, want := range []string{"list the versions of registry.opentofu.org/hashicorp/foo in " + proxy.Host + "/tf/registry.opentofu.org/hashicorp/foo", tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if got := proxy.Pages(); got != tt.pages {
				t.Errorf("%d pages asked for, want %d", got, tt.pages)
			}
		})
	}
}

// A blob that stops coming half-way fails the read within the stall
// timeout.
func TestBlobStall(t *testing.T) {
	const stall = 500 * time.Millisecond
	foo := addrs.MustParseProvider("hashicorp/foo")
	s, proxy := hostileStore(t, ocistore.Config{StallTimeout: stall})
	proxy.Set(hostileoci.StallBlobs)
	rc, err := s.OpenArchive(t.Context(), foo, addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	began := time.Now()
	_, err = io.Copy(io.Discard, rc)
	if !errors.Is(err, httpx.ErrStalled) {
		t.Fatalf("reading the archive: %v, want ErrStalled", err)
	}
	if !strings.Contains(err.Error(), "no data for 500ms") {
		t.Errorf("the error does not name the limit: %v", err)
	}
	if d := time.Since(began); d > 10*stall {
		t.Errorf("the read gave up after %s", d)
	}
}

// A registry's requests are retried as often as Retries says, each retry
// told to the context's handler with the request's URL.
func TestRegistryRequestsFollowRetries(t *testing.T) {
	foo := addrs.MustParseProvider("hashicorp/foo")
	for _, tt := range []struct {
		name    string
		retries int
		wantErr bool
	}{
		{"retried", 2, false},
		{"not retried", 0, true},
		{"dropped, retried", 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, proxy := hostileStore(t, ocistore.Config{Retries: tt.retries, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
			seen := &notifytest.Recorder{}
			if strings.HasPrefix(tt.name, "dropped") {
				proxy.DropNext(2)
			} else {
				proxy.FailNext(2)
			}
			_, err := s.Versions(notify.With(t.Context(), seen), foo)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Versions: %v, want an error: %v", err, tt.wantErr)
			}
			wantFailed, wantEvents := int64(2), 2
			if tt.retries == 0 {
				wantFailed, wantEvents = 1, 0
			}
			if strings.HasPrefix(tt.name, "dropped") {
				if len(seen.Retries()) != 2 {
					t.Errorf("retries told: %v, want 2", seen.Retries())
				}
				return
			}
			if got := proxy.Failed(); got != wantFailed {
				t.Errorf("%d answers of 503, want %d", got, wantFailed)
			}
			events := seen.Retries()
			if len(events) != wantEvents {
				t.Fatalf("retries told: %v, want %d", events, wantEvents)
			}
			for i, r := range events {
				e := r.String()
				if want := fmt.Sprintf("https://%s/v2/tf/registry.opentofu.org/hashicorp/foo/", proxy.Host); !strings.HasPrefix(e, want) ||
					!strings.Contains(e, fmt.Sprintf(" attempt %d: ", i+2)) || !strings.Contains(e, "503") {
					t.Errorf("retry %d told as %q, want a URL under %s, attempt %d and the status", i, e, want, i+2)
				}
			}
		})
	}
}
