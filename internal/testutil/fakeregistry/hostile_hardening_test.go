package fakeregistry

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHostileOrigin(t *testing.T) {
	f := newFixture(t)
	f.reg.Add("hashicorp", "null", "3.2.1", "linux_amd64")
	zip := f.reg.Archive("hashicorp", "null", "3.2.1", "linux_amd64")
	archive := ArchivePath("hashicorp", "null", "3.2.1", "linux_amd64")

	t.Run("request log and plain listener", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.reg.PlainURL()+DiscoveryPath, nil)
		req.Header.Set("Authorization", "Bearer t")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		log := f.reg.RequestLog()
		last := log[len(log)-1]
		if last.Scheme != "http" || last.Path != DiscoveryPath || last.Authorization != "Bearer t" || !strings.HasPrefix(f.reg.PlainURL(), "http://"+last.Host) {
			t.Errorf("logged %+v", last)
		}
	})

	t.Run("redirect and service URL", func(t *testing.T) {
		f.reg.Reset()
		f.reg.Redirect(archive, "https://elsewhere.example/x")
		f.reg.SetServiceURL("http://plain.example/v1/")
		f.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		defer func() { f.client.CheckRedirect = nil }()
		_, h := f.get(t, f.reg.URL+archive, http.StatusFound)
		if h.Get("Location") != "https://elsewhere.example/x" {
			t.Errorf("Location %q", h.Get("Location"))
		}
		if got := f.services(t); got != "http://plain.example/v1/" {
			t.Errorf("providers.v1 = %q", got)
		}
	})

	t.Run("plain, presigned and announced downloads", func(t *testing.T) {
		f.reg.Reset()
		f.reg.PlainHTTPDownloads("hashicorp", "null", "3.2.1")
		f.reg.PresignDownloads("hashicorp", "null", "3.2.1", "X-Amz-Signature=s")
		f.reg.AnnouncePackages()
		body, _ := f.get(t, f.reg.ServicesURL+"hashicorp/null/3.2.1/download/linux/amd64", http.StatusOK)
		for _, want := range []string{
			`"download_url":"` + f.reg.PlainURL() + archive + `?X-Amz-Signature=s"`,
			`"packages":{"linux_amd64":{"hashes":["zh:` + sha256Hex(zip) + `"],"package_size":` + strconv.Itoa(len(zip)) + `}}`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("download document lacks %s:\n%s", want, body)
			}
		}
	})

	t.Run("drip and oversize", func(t *testing.T) {
		f.reg.Reset()
		versions := VersionsPath("hashicorp", "null")
		want, _ := f.get(t, f.reg.URL+versions, http.StatusOK)
		f.reg.Drip(versions, 1, time.Millisecond)
		began := time.Now()
		if body, _ := f.get(t, f.reg.URL+versions, http.StatusOK); string(body) != string(want) || time.Since(began) < time.Duration(len(want)-1)*time.Millisecond {
			t.Errorf("drip: %q in %s", body, time.Since(began))
		}
		f.reg.Oversize(archive, 1, 1<<20, false)
		resp, err := f.client.Get(f.reg.URL + archive)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) != 1<<20 || string(body[:len(zip)]) != string(zip) || resp.ContentLength != -1 {
			t.Errorf("oversize: %d bytes, Content-Length %d, %v", len(body), resp.ContentLength, err)
		}
	})
}
