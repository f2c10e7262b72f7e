package tfconfig

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMonorepoFixture loads the roots of testdata/monorepo, the fixture the
// end-to-end tests run a real "tofu init" on. Its README lists the versions
// OpenTofu selects from these constraints.
func TestMonorepoFixture(t *testing.T) {
	const deprecated = "platform/providers.tf:3:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers."
	tests := []struct {
		root         string
		want         map[string][]Constraint
		wantWarnings []string
	}{
		{
			root: "app-a",
			want: map[string][]Constraint{
				foo: cs(
					"~> 1.0", "app-a/main.tf:5",
					">= 1.1.0", "modules/network/versions.tf:5",
				),
				bar: none(),
				baz: none(),
			},
		},
		{
			root: "app-b",
			want: map[string][]Constraint{
				// versions.tofu, not versions.tf ("~> 3.0").
				baz: cs("3.0.0", "app-b/versions.tofu:6"),
				foo: cs(">= 1.0.0, < 2.0.0", "app-b/.terraform/modules/net/versions.tf:5"),
				qux: cs("~> 1.0", "app-b/.terraform/modules/net/versions.tf:9"),
				bar: cs("< 0.2.0", "app-b/.terraform/modules/net/dns/main.tf:5"),
			},
		},
		{
			root: "platform",
			want: map[string][]Constraint{
				foo: cs(
					"~> 1.0", "platform/main.tf.json:6",
					"< 1.2.0", "platform/providers.tf:3",
					">= 1.1.0", "modules/network/versions.tf:5",
				),
				// override.tf replaces main.tf.json's "~> 1.0".
				qux: cs("< 1.5.0", "platform/override.tf:7"),
				bar: none(),
			},
			wantWarnings: []string{deprecated},
		},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			t.Chdir(filepath.Join("..", "..", "testdata", "monorepo"))
			dir := tt.root
			r, err := Load(dir)
			if err != nil {
				t.Fatalf("Load(%s): %v", dir, err)
			}
			if diff := cmp.Diff(tt.want, byAddress(r)); diff != "" {
				t.Errorf("providers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, r.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
