package layout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/hashing"
)

// The bytes tofu providers mirror writes (tofu-internals.md §0): two-space
// indentation, sorted keys, no trailing newline.
const (
	wantIndexDoc = `{
  "versions": {
    "1.1.0": {},
    "2.0.0": {}
  }
}`
	wantVersionDoc = `{
  "archives": {
    "darwin_arm64": {
      "hashes": [
        "h1:yEyurupy0iJI4RMLjtlztk1zjerMMUAxjjAaP8UGUgs="
      ],
      "url": "terraform-provider-foo_1.1.0_darwin_arm64.zip"
    },
    "linux_amd64": {
      "hashes": [
        "h1:sD6x+FB1yc56Ck+upU0x1ShaRxQ1swgMnm5lOgctWO4=",
        "zh:ec4f8096c45a914872fca7f6d6c8b69a1ebc20f9c447226544feb267ee339697"
      ],
      "url": "terraform-provider-foo_1.1.0_linux_amd64.zip"
    }
  }
}`
)

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "index as written by tofu",
			v:    Index{Versions: map[string]struct{}{"2.0.0": {}, "1.1.0": {}}},
			want: wantIndexDoc,
		},
		{
			name: "version document as written by tofu",
			v: VersionDoc{Archives: map[string]ArchiveEntry{
				"linux_amd64": {
					Hashes: []hashing.Hash{
						"h1:sD6x+FB1yc56Ck+upU0x1ShaRxQ1swgMnm5lOgctWO4=",
						"zh:ec4f8096c45a914872fca7f6d6c8b69a1ebc20f9c447226544feb267ee339697",
					},
					URL: "terraform-provider-foo_1.1.0_linux_amd64.zip",
				},
				"darwin_arm64": {
					Hashes: []hashing.Hash{"h1:yEyurupy0iJI4RMLjtlztk1zjerMMUAxjjAaP8UGUgs="},
					URL:    "terraform-provider-foo_1.1.0_darwin_arm64.zip",
				},
			}},
			want: wantVersionDoc,
		},
		{
			name: "keys sort byte-wise, not by semver",
			v:    Index{Versions: map[string]struct{}{"1.9.0": {}, "1.10.0": {}, "1.2.0-beta1": {}, "1.2.0": {}}},
			want: "{\n  \"versions\": {\n    \"1.10.0\": {},\n    \"1.2.0\": {},\n    \"1.2.0-beta1\": {},\n    \"1.9.0\": {}\n  }\n}",
		},
		{
			name: "empty index",
			v:    Index{Versions: map[string]struct{}{}},
			want: "{\n  \"versions\": {}\n}",
		},
		{
			name: "empty version document",
			v:    VersionDoc{Archives: map[string]ArchiveEntry{}},
			want: "{\n  \"archives\": {}\n}",
		},
		{
			name: "archive without hashes omits the key",
			v:    VersionDoc{Archives: map[string]ArchiveEntry{"linux_amd64": {URL: "a.zip"}}},
			want: "{\n  \"archives\": {\n    \"linux_amd64\": {\n      \"url\": \"a.zip\"\n    }\n  }\n}",
		},
		{
			name: "HTML characters are escaped",
			v:    VersionDoc{Archives: map[string]ArchiveEntry{"a&b": {URL: "<x>&y.zip"}}},
			want: "{\n  \"archives\": {\n    \"a\\u0026b\": {\n      \"url\": \"\\u003cx\\u003e\\u0026y.zip\"\n    }\n  }\n}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Encode mismatch (-want +got):\n%s", diff)
			}
			if strings.HasSuffix(string(got), "\n") {
				t.Error("Encode output ends with a newline")
			}
		})
	}
}

func TestDecodeIndex(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    Index
		wantErr string
	}{
		{name: "as written by tofu", doc: wantIndexDoc, want: Index{Versions: map[string]struct{}{"1.1.0": {}, "2.0.0": {}}}},
		{name: "compact", doc: `{"versions":{"1.0.0":{}}}`, want: Index{Versions: map[string]struct{}{"1.0.0": {}}}},
		{name: "empty versions", doc: `{"versions":{}}`, want: Index{Versions: map[string]struct{}{}}},
		{name: "trailing newline", doc: wantIndexDoc + "\n", want: Index{Versions: map[string]struct{}{"1.1.0": {}, "2.0.0": {}}}},
		{name: "null version value", doc: `{"versions":{"1.0.0":null}}`, want: Index{Versions: map[string]struct{}{"1.0.0": {}}}},

		{name: "empty input", doc: ``, wantErr: "EOF"},
		{name: "whitespace", doc: " \n", wantErr: "EOF"},
		{name: "null", doc: `null`, wantErr: `no "versions"`},
		{name: "array", doc: `[]`, wantErr: "cannot unmarshal array"},
		{name: "string", doc: `"versions"`, wantErr: "cannot unmarshal string"},
		{name: "missing versions", doc: `{}`, wantErr: `no "versions"`},
		{name: "versions null", doc: `{"versions":null}`, wantErr: `no "versions"`},
		{name: "versions array", doc: `{"versions":["1.0.0"]}`, wantErr: "cannot unmarshal array"},
		{name: "version value not an object", doc: `{"versions":{"1.0.0":true}}`, wantErr: "cannot unmarshal bool"},
		{name: "unknown top-level field", doc: `{"versions":{},"extra":1}`, wantErr: `unknown field "extra"`},
		{name: "unknown field in a version", doc: `{"versions":{"1.0.0":{"x":1}}}`, wantErr: `unknown field "x"`},
		{name: "version document instead", doc: `{"archives":{}}`, wantErr: `unknown field "archives"`},
		{name: "truncated", doc: wantIndexDoc[:len(wantIndexDoc)-2], wantErr: "EOF"},
		{name: "trailing object", doc: `{"versions":{}} {}`, wantErr: "trailing data"},
		{name: "trailing garbage", doc: `{"versions":{}} x`, wantErr: "trailing data"},
		{name: "trailing closing brace", doc: `{"versions":{}}}`, wantErr: "trailing data"},
		{name: "trailing closing bracket", doc: `{"versions":{}}]`, wantErr: "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeIndex([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeIndex(%q) = %v, want error containing %q", tt.doc, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("DecodeIndex(%q) error = %q, want it to contain %q", tt.doc, err, tt.wantErr)
				}
				if got.Versions != nil {
					t.Errorf("DecodeIndex returned %v with an error, want zero Index", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeIndex(%q): %v", tt.doc, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeIndex mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeVersion(t *testing.T) {
	linux := `{"archives":{"linux_amd64":{"hashes":["h1:x"],"url":"a.zip"}}}`
	tests := []struct {
		name    string
		doc     string
		want    VersionDoc
		wantErr string
	}{
		{
			name: "as written by tofu",
			doc:  wantVersionDoc,
			want: VersionDoc{Archives: map[string]ArchiveEntry{
				"darwin_arm64": {
					Hashes: []hashing.Hash{"h1:yEyurupy0iJI4RMLjtlztk1zjerMMUAxjjAaP8UGUgs="},
					URL:    "terraform-provider-foo_1.1.0_darwin_arm64.zip",
				},
				"linux_amd64": {
					Hashes: []hashing.Hash{
						"h1:sD6x+FB1yc56Ck+upU0x1ShaRxQ1swgMnm5lOgctWO4=",
						"zh:ec4f8096c45a914872fca7f6d6c8b69a1ebc20f9c447226544feb267ee339697",
					},
					URL: "terraform-provider-foo_1.1.0_linux_amd64.zip",
				},
			}},
		},
		{name: "compact", doc: linux, want: VersionDoc{Archives: map[string]ArchiveEntry{"linux_amd64": {Hashes: []hashing.Hash{"h1:x"}, URL: "a.zip"}}}},
		{name: "no hashes", doc: `{"archives":{"linux_amd64":{"url":"a.zip"}}}`, want: VersionDoc{Archives: map[string]ArchiveEntry{"linux_amd64": {URL: "a.zip"}}}},
		{name: "no archives", doc: `{"archives":{}}`, want: VersionDoc{Archives: map[string]ArchiveEntry{}}},
		{name: "trailing newline", doc: linux + "\n", want: VersionDoc{Archives: map[string]ArchiveEntry{"linux_amd64": {Hashes: []hashing.Hash{"h1:x"}, URL: "a.zip"}}}},

		{name: "empty input", doc: ``, wantErr: "EOF"},
		{name: "null", doc: `null`, wantErr: `no "archives"`},
		{name: "array", doc: `[]`, wantErr: "cannot unmarshal array"},
		{name: "missing archives", doc: `{}`, wantErr: `no "archives"`},
		{name: "archives null", doc: `{"archives":null}`, wantErr: `no "archives"`},
		{name: "archives array", doc: `{"archives":[]}`, wantErr: "cannot unmarshal array"},
		{name: "archive without url", doc: `{"archives":{"linux_amd64":{"hashes":["h1:x"]}}}`, wantErr: "archive linux_amd64 has no url"},
		{name: "archive with empty url", doc: `{"archives":{"linux_amd64":{"url":""}}}`, wantErr: "has no url"},
		{name: "archive null", doc: `{"archives":{"linux_amd64":null}}`, wantErr: "has no url"},
		{name: "archive not an object", doc: `{"archives":{"linux_amd64":"a.zip"}}`, wantErr: "cannot unmarshal string"},
		{name: "hashes not an array", doc: `{"archives":{"linux_amd64":{"hashes":"h1:x","url":"a.zip"}}}`, wantErr: "cannot unmarshal string"},
		{name: "hash not a string", doc: `{"archives":{"linux_amd64":{"hashes":[1],"url":"a.zip"}}}`, wantErr: "cannot unmarshal number"},
		{name: "unknown top-level field", doc: `{"archives":{},"versions":{}}`, wantErr: `unknown field "versions"`},
		{name: "unknown archive field", doc: `{"archives":{"linux_amd64":{"url":"a.zip","size":1}}}`, wantErr: `unknown field "size"`},
		{name: "index instead", doc: wantIndexDoc, wantErr: `unknown field "versions"`},
		{name: "trailing object", doc: linux + `{}`, wantErr: "trailing data"},
		{name: "trailing closing brace", doc: linux + `}`, wantErr: "trailing data"},
		{name: "trailing closing bracket", doc: linux + `]`, wantErr: "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeVersion([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeVersion(%q) = %v, want error containing %q", tt.doc, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("DecodeVersion(%q) error = %q, want it to contain %q", tt.doc, err, tt.wantErr)
				}
				if got.Archives != nil {
					t.Errorf("DecodeVersion returned %v with an error, want zero VersionDoc", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeVersion(%q): %v", tt.doc, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeVersion mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSortedHashes(t *testing.T) {
	in := []hashing.Hash{"zh:b", "h1:b", "zh:a", "h1:b", "h1:a"}
	orig := append([]hashing.Hash(nil), in...)
	got := sortedHashes(in)
	if diff := cmp.Diff([]hashing.Hash{"h1:a", "h1:b", "zh:a", "zh:b"}, got); diff != "" {
		t.Errorf("sortedHashes mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig, in); diff != "" {
		t.Errorf("sortedHashes modified its argument (-before +after):\n%s", diff)
	}
	if got := sortedHashes(nil); len(got) != 0 {
		t.Errorf("sortedHashes(nil) = %v", got)
	}
}
