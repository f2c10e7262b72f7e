package tfconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A provider address in a .tf.json file is re-parsed as an expression: a
// string nested a hundred thousand levels deep must not overflow the stack.
func TestJSONProviderExpressionTooDeep(t *testing.T) {
	dir := t.TempDir()
	deep := strings.Repeat("!", 4<<20) + "aws"
	src := `{"resource": {"aws_instance": {"x": {"provider": "` + deep + `"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "main.tf.json"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _ = Load(dir) // must return, with or without an error
}
