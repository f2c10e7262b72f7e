package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestExchangeRenameat2(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "id"), []byte(filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := RenameExchange(a, b)
	if IsExchangeUnsupported(err) {
		t.Skipf("RENAME_EXCHANGE not supported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "b", b: "a"} {
		if got, err := os.ReadFile(filepath.Join(p, "id")); err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", p, got, err, want)
		}
	}
	// Exchanging with a missing name is an error, not "unsupported".
	err = RenameExchange(a, filepath.Join(dir, "missing"))
	if err == nil || IsExchangeUnsupported(err) {
		t.Errorf("exchange with a missing name: %v", err)
	}
}

func TestExchangeUnsupportedErrors(t *testing.T) {
	wrap := func(err error) error { return &os.LinkError{Op: "renameat2", Old: "a", New: "b", Err: err} }
	for _, err := range []error{wrap(syscall.EINVAL), wrap(syscall.ENOSYS), wrap(errors.ErrUnsupported)} {
		if !IsExchangeUnsupported(err) {
			t.Errorf("%v is not taken as unsupported", err)
		}
	}
	for _, err := range []error{wrap(syscall.EXDEV), wrap(syscall.EACCES), wrap(syscall.ENOENT)} {
		if IsExchangeUnsupported(err) {
			t.Errorf("%v is taken as unsupported", err)
		}
	}
}
