package regproto

import (
	"encoding/json"
	"testing"
)

// TestEncoding pins the bytes of the documents tfmirror writes: the
// registry replica is compared byte for byte between runs, and clients
// read these field names.
func TestEncoding(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  any
		want string
	}{
		{"discovery", Discovery{ProvidersV1: "/p/", ModulesV1: "/m/"}, `{"modules.v1":"/m/","providers.v1":"/p/"}`},
		{"module versions", ModuleVersions{Modules: []ModuleVersionList{{Versions: []ModuleVersion{{Version: "1.0.0"}}}}}, `{"modules":[{"versions":[{"version":"1.0.0"}]}]}`},
		{"empty module versions", ModuleVersions{Modules: []ModuleVersionList{{Versions: []ModuleVersion{}}}}, `{"modules":[{"versions":[]}]}`},
		{"module download", ModuleDownload{Location: "./a.tgz"}, `{"location":"./a.tgz"}`},
		{"provider versions", Versions{Versions: []Version{{Version: "1.0.0", Protocols: []string{}, Platforms: []Platform{{OS: "linux", Arch: "amd64"}}}}}, `{"versions":[{"version":"1.0.0","protocols":[],"platforms":[{"os":"linux","arch":"amd64"}]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
