package hashing

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Digests used in the SHA256SUMS fixtures.
var (
	sumA = sha256.Sum256([]byte("a"))
	sumB = sha256.Sum256([]byte("b"))
	sumC = sha256.Sum256([]byte("c"))
	hexA = hex.EncodeToString(sumA[:])
	hexB = hex.EncodeToString(sumB[:])
	hexC = hex.EncodeToString(sumC[:])
)

func TestParseSums(t *testing.T) {
	valid := Sums{
		"terraform-provider-foo_1.0.0_linux_amd64.zip":  sumA,
		"terraform-provider-foo_1.0.0_darwin_arm64.zip": sumB,
		"terraform-provider-foo_1.0.0_manifest.json":    sumC,
	}
	lines := []string{
		hexA + "  terraform-provider-foo_1.0.0_linux_amd64.zip",
		hexB + "  terraform-provider-foo_1.0.0_darwin_arm64.zip",
		hexC + "  terraform-provider-foo_1.0.0_manifest.json",
	}
	tests := []struct {
		name    string
		doc     string
		want    Sums
		wantErr string // substring of the error; "" means success
	}{
		{
			name: "valid with trailing newline",
			doc:  strings.Join(lines, "\n") + "\n",
			want: valid,
		},
		{
			name: "valid without trailing newline",
			doc:  strings.Join(lines, "\n"),
			want: valid,
		},
		{
			name: "single line",
			doc:  hexA + "  a.zip\n",
			want: Sums{"a.zip": sumA},
		},
		{
			name: "uppercase hex digest",
			doc:  strings.ToUpper(hexA) + "  a.zip\n",
			want: Sums{"a.zip": sumA},
		},
		{
			// Like OpenTofu, fields are split with bytes.Fields, so \r is
			// whitespace and CRLF documents parse without the \r in names.
			name: "CRLF line endings tolerated, CR is not part of the name",
			doc:  hexA + "  a.zip\r\n" + hexB + "  b.zip\r\n",
			want: Sums{"a.zip": sumA, "b.zip": sumB},
		},
		{
			// bytes.Fields also makes the separator lenient: one space, a
			// tab or leading blanks are accepted, as in OpenTofu.
			name: "single space, tab and leading blanks tolerated",
			doc:  hexA + " a.zip\n" + hexB + "\tb.zip\n  " + hexC + "  c.zip  \n",
			want: Sums{"a.zip": sumA, "b.zip": sumB, "c.zip": sumC},
		},
		{
			// sha256sum's binary-mode marker is not stripped: the name
			// must match the archive name exactly, so it will not match.
			name: "binary marker kept in the name",
			doc:  hexA + " *a.zip\n",
			want: Sums{"*a.zip": sumA},
		},
		{
			name:    "empty document",
			doc:     "",
			wantErr: "empty",
		},
		{
			name:    "only a newline",
			doc:     "\n",
			wantErr: "line 1: blank line",
		},
		{
			name:    "blank line in the middle",
			doc:     lines[0] + "\n\n" + lines[1] + "\n",
			wantErr: "line 2: blank line",
		},
		{
			name:    "whitespace-only line",
			doc:     lines[0] + "\n \t\n",
			wantErr: "line 2: blank line",
		},
		{
			name:    "trailing blank line",
			doc:     lines[0] + "\n" + lines[1] + "\n\n",
			wantErr: "line 3: blank line",
		},
		{
			name:    "CRLF trailing blank line",
			doc:     lines[0] + "\r\n\r\n",
			wantErr: "line 2: blank line",
		},
		{
			name:    "one field",
			doc:     hexA + "\n",
			wantErr: "line 1: want",
		},
		{
			name:    "three fields",
			doc:     lines[0] + "\n" + hexB + "  b.zip extra\n",
			wantErr: "line 2: want",
		},
		{
			name:    "name with a space",
			doc:     hexA + "  my file.zip\n",
			wantErr: "line 1: want",
		},
		{
			name:    "non-hex digest",
			doc:     strings.Repeat("g", 64) + "  a.zip\n",
			wantErr: "line 1: \"gggg",
		},
		{
			name:    "short digest",
			doc:     hexA[:63] + "  a.zip\n",
			wantErr: "is not a SHA-256 digest",
		},
		{
			name:    "long digest",
			doc:     hexA + "0  a.zip\n",
			wantErr: "is not a SHA-256 digest",
		},
		{
			name:    "fields swapped",
			doc:     "a.zip  " + hexA + "\n",
			wantErr: "is not a SHA-256 digest",
		},
		{
			name:    "duplicate name",
			doc:     hexA + "  a.zip\n" + hexB + "  b.zip\n" + hexC + "  a.zip\n",
			wantErr: "line 3: \"a.zip\" is listed twice",
		},
		{
			name:    "duplicate name with the same digest",
			doc:     hexA + "  a.zip\n" + hexA + "  a.zip\n",
			wantErr: "listed twice",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSums([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseSums succeeded with %v, want error containing %q", got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseSums error = %q, want it to contain %q", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("ParseSums returned %v with an error, want nil", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSums: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSums mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSumsZHashes(t *testing.T) {
	s := Sums{"c.zip": sumC, "a.zip": sumA, "b.zip": sumB, "manifest.json": sumA}
	got := s.ZHashes()
	want := []Hash{ZH(sumA), ZH(sumA), ZH(sumB), ZH(sumC)}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ZHashes mismatch (-want +got):\n%s", diff)
	}
	for _, h := range got {
		if !strings.HasPrefix(string(h), SchemeZH) || len(h) != len(SchemeZH)+64 {
			t.Errorf("ZHashes element %q is not a zh: hash", h)
		}
	}
	if got := (Sums{}).ZHashes(); len(got) != 0 {
		t.Errorf("empty Sums ZHashes = %v, want none", got)
	}
	if got := Sums(nil).ZHashes(); len(got) != 0 {
		t.Errorf("nil Sums ZHashes = %v, want none", got)
	}
}

func TestParseHex(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    [sha256.Size]byte
		wantErr bool
	}{
		{"lowercase", hexA, sumA, false},
		{"uppercase", strings.ToUpper(hexA), sumA, false},
		{"mixed case", strings.ToUpper(hexA[:32]) + hexA[32:], sumA, false},
		{"empty", "", [sha256.Size]byte{}, true},
		{"short", hexA[:62], [sha256.Size]byte{}, true},
		{"odd length", hexA[:63], [sha256.Size]byte{}, true},
		{"long", hexA + "00", [sha256.Size]byte{}, true},
		{"non-hex", "z" + hexA[1:], [sha256.Size]byte{}, true},
		{"zh prefix", "zh:" + hexA, [sha256.Size]byte{}, true},
		{"surrounding space", " " + hexA[1:], [sha256.Size]byte{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHex(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseHex(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseHex(%q) = %x, want %x", tt.in, got, tt.want)
			}
		})
	}
}
