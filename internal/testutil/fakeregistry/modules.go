package fakeregistry

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
)

// modulesPrefix is the URL path of the modules.v1 service.
const modulesPrefix = "/v1/modules/"

// modulePackage is one module package (namespace/name/system) and its
// versions in the order added.
type modulePackage struct {
	versions []*moduleVersion
}

// moduleVersion is one published version of a module: where its download
// endpoint says it is, and how it says so.
type moduleVersion struct {
	name     string
	location string
	header   bool // X-Terraform-Get on a 204, not a JSON body
}

// ModuleVersionsPath is the URL path of a module's version listing;
// module is "namespace/name/system".
func ModuleVersionsPath(module string) string {
	return modulesPrefix + module + "/versions"
}

// ModuleDownloadPath is the URL path of a module version's download
// endpoint; module is "namespace/name/system".
func ModuleDownloadPath(module, version string) string {
	return modulesPrefix + module + "/" + version + "/download"
}

// AddModule makes module ("namespace/name/system") available at version,
// with the given download location, returned exactly as given: in the JSON
// body ({"location": ...}) of a 200 answer, or, with header, as the
// X-Terraform-Get header of a 204 answer without a body. Adding a version
// again replaces its location.
func (r *Registry) AddModule(module, version, location string, header bool) {
	r.t.Helper()
	if parts := strings.Split(module, "/"); len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		r.t.Fatalf("fakeregistry: AddModule(%q): want namespace/name/system", module)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.modules[module]
	if m == nil {
		m = &modulePackage{}
		r.modules[module] = m
	}
	for _, v := range m.versions {
		if v.name == version {
			v.location, v.header = location, header
			return
		}
	}
	m.versions = append(m.versions, &moduleVersion{name: version, location: location, header: header})
}

// ModuleRequests counts the requests to module download endpoints so far
// (any method, faulted or not, over https or PlainURL) by
// "namespace/name/system/version".
func (r *Registry) ModuleRequests() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	for _, req := range r.log {
		rest, ok := strings.CutPrefix(req.Path, modulesPrefix)
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(rest, "/download")
		if ok && strings.Count(key, "/") == 3 {
			counts[key]++
		}
	}
	return counts
}

// routeModules adds the modules.v1 endpoints to mux.
func (r *Registry) routeModules(mux *http.ServeMux) {
	mux.HandleFunc("GET /files/{name...}", r.serve(r.file))
	mux.HandleFunc("GET "+modulesPrefix+"{ns}/{name}/{system}/versions", r.serve(r.moduleVersions))
	mux.HandleFunc("GET "+modulesPrefix+"{ns}/{name}/{system}/{version}/download", r.serve(r.moduleDownload))
}

func moduleKey(req *http.Request) string {
	return req.PathValue("ns") + "/" + req.PathValue("name") + "/" + req.PathValue("system")
}

// GenerateModules makes the registry answer for every module AddModule
// did not add, as a hostile registry may: it has version 1.0.0, whose
// download location is a .tar.gz archive on the registry holding the
// files pkg returns for the module ("namespace/name/system"), path to
// content. pkg runs for each download of the archive, with the
// registry's lock held.
func (r *Registry) GenerateModules(pkg func(module string) map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.generate = pkg
}

// generatedPrefix is the URL path of GenerateModules' archives.
const generatedPrefix = "/files/generated/"

// generated is the module package GenerateModules gives module, or nil
// when it gives none: a version listing, a download answer, or the
// archive. The caller holds r.mu.
func (r *Registry) generated(req *http.Request) *response {
	if r.generate == nil {
		return nil
	}
	if module, ok := strings.CutPrefix(req.URL.Path, generatedPrefix); ok {
		files := r.generate(strings.TrimSuffix(module, ".tar.gz"))
		var entries []targz.Entry
		for _, name := range slices.Sorted(maps.Keys(files)) {
			entries = append(entries, targz.Regular(name, files[name]))
		}
		return &response{contentType: "application/octet-stream", body: targz.Pack(r.t, entries, nil)}
	}
	if req.PathValue("version") == "" {
		entry := regproto.ModuleVersionList{Versions: []regproto.ModuleVersion{{Version: "1.0.0"}}}
		return jsonResponse(regproto.ModuleVersions{Modules: []regproto.ModuleVersionList{entry}})
	}
	if req.PathValue("version") != "1.0.0" {
		return nil
	}
	return jsonResponse(regproto.ModuleDownload{Location: generatedPrefix + moduleKey(req) + ".tar.gz"})
}

// moduleVersions lists a module's versions; nil (404) if it is unknown.
// The caller holds r.mu.
func (r *Registry) moduleVersions(req *http.Request) *response {
	m := r.modules[moduleKey(req)]
	if m == nil {
		return r.generated(req)
	}
	entry := regproto.ModuleVersionList{Versions: []regproto.ModuleVersion{}}
	for _, v := range m.versions {
		entry.Versions = append(entry.Versions, regproto.ModuleVersion{Version: v.name})
	}
	return jsonResponse(regproto.ModuleVersions{Modules: []regproto.ModuleVersionList{entry}})
}

// moduleDownload answers a download request with the version's location;
// nil (404) if the version is unknown. The caller holds r.mu.
func (r *Registry) moduleDownload(req *http.Request) *response {
	m := r.modules[moduleKey(req)]
	if m == nil {
		return r.generated(req)
	}
	for _, v := range m.versions {
		switch {
		case v.name != req.PathValue("version"):
			continue
		case v.header:
			return &response{status: http.StatusNoContent, header: http.Header{regproto.LocationHeader: {v.location}}}
		default:
			return jsonResponse(regproto.ModuleDownload{Location: v.location})
		}
	}
	return nil
}

// AddFile serves body at URL path "/files/" + name (a module archive a
// relative location names, for one). It returns the path.
func (r *Registry) AddFile(name string, body []byte) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string][]byte{}
	}
	p := "/files/" + name
	r.files[p] = append([]byte(nil), body...)
	return p
}

// file answers with a file AddFile added; nil (404) if none. The caller
// holds r.mu.
func (r *Registry) file(req *http.Request) *response {
	body, ok := r.files[req.URL.Path]
	if !ok {
		return r.generated(req)
	}
	return &response{contentType: "application/octet-stream", body: body}
}
