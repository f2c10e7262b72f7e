package fakeregistry

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Documents of the registry protocol, fields in the order served.
type (
	versionsDoc struct {
		Versions []versionEntry `json:"versions"`
	}
	versionEntry struct {
		Version   string          `json:"version"`
		Protocols []string        `json:"protocols"`
		Platforms []platformEntry `json:"platforms"`
	}
	platformEntry struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	downloadDoc struct {
		Protocols           []string    `json:"protocols"`
		OS                  string      `json:"os"`
		Arch                string      `json:"arch"`
		Filename            string      `json:"filename"`
		DownloadURL         string      `json:"download_url"`
		ShasumsURL          string      `json:"shasums_url"`
		ShasumsSignatureURL string      `json:"shasums_signature_url"`
		Shasum              string      `json:"shasum"`
		SigningKeys         signingKeys `json:"signing_keys"`
	}
	signingKeys struct {
		GPGPublicKeys []gpgKey `json:"gpg_public_keys"`
	}
	gpgKey struct {
		KeyID          string  `json:"key_id"`
		ASCIIArmor     string  `json:"ascii_armor"`
		TrustSignature string  `json:"trust_signature"`
		Source         string  `json:"source"`
		SourceURL      *string `json:"source_url"`
	}
)

// response is a body ready to be written.
type response struct {
	contentType string
	body        []byte
}

// start serves the registry over TLS and returns its URL.
func (r *Registry) start(t testing.TB, ca *testca.CA) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(r.handler())
	srv.TLS = ca.TLSConfig(t, "localhost", "127.0.0.1", UnresolvableHost)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// handler records every request, then routes it.
func (r *Registry) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", r.serve(r.discovery))
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/versions", r.serve(r.versions))
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", r.serve(r.download))
	mux.HandleFunc("GET /releases/{ns}/{type}/{version}/{file}", r.serve(r.release))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.record(req)
		mux.ServeHTTP(w, req)
	})
}

func (r *Registry) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
}

// serve turns a function that builds a response under the lock into a
// handler; a nil response is a 404.
func (r *Registry) serve(build func(*http.Request) *response) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		resp := build(req)
		r.mu.Unlock()
		if resp == nil {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", resp.contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(resp.body)))
		w.Write(resp.body)
	}
}

func (r *Registry) discovery(*http.Request) *response {
	return jsonResponse(map[string]string{"providers.v1": "/v1/providers/"})
}

func (r *Registry) versions(req *http.Request) *response {
	p := r.providers[req.PathValue("ns")+"/"+req.PathValue("type")]
	if p == nil {
		return nil
	}
	doc := versionsDoc{Versions: []versionEntry{}}
	for _, v := range p.versions {
		doc.Versions = append(doc.Versions, versionEntry{
			Version:   v.name,
			Protocols: v.protocols,
			Platforms: platformEntries(v.platforms()),
		})
	}
	return jsonResponse(doc)
}

func platformEntries(platforms []string) []platformEntry {
	out := []platformEntry{}
	for _, p := range platforms {
		os, arch, _ := strings.Cut(p, "_")
		out = append(out, platformEntry{OS: os, Arch: arch})
	}
	return out
}

func (r *Registry) download(req *http.Request) *response {
	ns, typ, ver := req.PathValue("ns"), req.PathValue("type"), req.PathValue("version")
	goos, arch := req.PathValue("os"), req.PathValue("arch")
	platform := goos + "_" + arch
	v := r.version(ns, typ, ver, false)
	if v == nil || v.archives[platform] == nil {
		return nil
	}
	base := "/releases/" + ns + "/" + typ + "/" + ver + "/"
	doc := downloadDoc{
		Protocols:           v.protocols,
		OS:                  goos,
		Arch:                arch,
		Filename:            zipName(typ, ver, platform),
		DownloadURL:         base + zipName(typ, ver, platform),
		ShasumsURL:          base + sumsName(typ, ver),
		ShasumsSignatureURL: base + sigName(typ, ver),
		Shasum:              sha256Hex(v.archives[platform]),
		SigningKeys:         r.signingKeys(v),
	}
	if r.faults.mismatch[packageKey(ns, typ, ver, platform)] {
		doc.Shasum = sha256Hex([]byte("not " + doc.Shasum))
	}
	return jsonResponse(doc)
}

func (r *Registry) signingKeys(v *version) signingKeys {
	if v.unsigned {
		return signingKeys{GPGPublicKeys: []gpgKey{}}
	}
	return signingKeys{GPGPublicKeys: []gpgKey{{KeyID: r.KeyID, ASCIIArmor: r.ArmoredKey}}}
}

func (r *Registry) release(req *http.Request) *response {
	ns, typ, ver := req.PathValue("ns"), req.PathValue("type"), req.PathValue("version")
	v := r.version(ns, typ, ver, false)
	if v == nil {
		return nil
	}
	switch file := req.PathValue("file"); file {
	case sumsName(typ, ver):
		return &response{"text/plain; charset=utf-8", v.sums}
	case sigName(typ, ver):
		return r.signature(v, versionKey(ns, typ, ver))
	case manifestName(typ, ver):
		return &response{"application/json", []byte(manifest)}
	default:
		return r.archive(v, versionKey(ns, typ, ver), typ, file)
	}
}

// signature serves the version's signature, or one by another key if the
// BadSignature fault is on.
func (r *Registry) signature(v *version, key string) *response {
	if !r.faults.badSig[key] {
		return &response{"application/octet-stream", v.sig}
	}
	sig, err := sign(r.otherKey, v.sums)
	if err != nil {
		r.t.Errorf("fakeregistry: sign with other key: %v", err)
		return nil
	}
	return &response{"application/octet-stream", sig}
}

// archive serves the zip named file, tampered if that fault is on.
func (r *Registry) archive(v *version, key, typ, file string) *response {
	for platform, data := range v.archives {
		if zipName(typ, v.name, platform) != file {
			continue
		}
		if r.faults.tampered[key+"/"+platform] {
			data = tamper(data)
		}
		return &response{"application/zip", data}
	}
	return nil
}

func jsonResponse(v any) *response {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed, encodable types are marshalled
	}
	return &response{"application/json", body}
}
