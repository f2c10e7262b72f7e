package registry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// discoTransport serves one discovery document and 404 for anything else.
type discoTransport struct{ doc []byte }

func (d discoTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{
		StatusCode: http.StatusNotFound, Status: "404 Not Found",
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req,
	}
	if req.URL.Path == "/.well-known/terraform.json" {
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(bytes.NewReader(d.doc))
	}
	return resp, nil
}

func FuzzDiscoveryDocument(f *testing.F) {
	f.Add([]byte(`{"providers.v1":"/v1/providers/"}`))
	f.Add([]byte(`{"providers.v1":"https://other.example/p"}`))
	f.Add([]byte(`{"providers.v1":"ftp://x/"}`))
	f.Add([]byte(`{"providers.v2":"/v2/"}`))
	f.Add([]byte(`{"providers.v1":42}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		client := &http.Client{Transport: discoTransport{doc: doc}}
		c := New(Config{HTTP: client, Discovery: client})
		u, err := c.serviceURL(context.Background(), "registry.example")
		if err != nil {
			return
		}
		if (u.Scheme != "https" && u.Scheme != "http") || !strings.HasSuffix(u.Path, "/") || u.User != nil {
			t.Fatalf("accepted service URL %s", u)
		}
	})
}
