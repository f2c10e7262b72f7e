package mirror

import (
	"slices"
	"testing"
)

func TestAdvisoryIDsAreDistinct(t *testing.T) {
	advs := []Advisory{
		{ID: "GO-2026-4985", Module: "github.com/klauspost/compress"},
		{ID: "GO-2024-0001", Module: "stdlib"},
		{ID: "GO-2026-4985", Module: "github.com/a/b"},
	}
	if got, want := AdvisoryIDs(advs), []string{"GO-2024-0001", "GO-2026-4985"}; !slices.Equal(got, want) {
		t.Errorf("AdvisoryIDs = %v, want %v", got, want)
	}
	if AdvisoryIDs(nil) != nil {
		t.Error("no advisories gave ids")
	}
}
