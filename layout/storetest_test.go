package layout_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/layout/storetest"
)

func TestDirStoreReader(t *testing.T) {
	storetest.TestReader(t, func(t *testing.T, dir string) layout.Reader {
		s, err := layout.NewDirStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestDirStoreStore(t *testing.T) {
	base := t.TempDir()
	storetest.TestStore(t, func(t *testing.T) layout.Store {
		// One directory per test, so that two stores of a test share it.
		s, err := layout.NewDirStore(filepath.Join(base, url.PathEscape(t.Name())))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The suite lets a store that does not refuse writes without its lock
// pass; DirStore refuses them.
func TestDirStoreRefusesWritesWithoutLock(t *testing.T) {
	s, err := layout.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "f", layout.Content{Data: []byte("x")}); !errors.Is(err, layout.ErrReadOnly) {
		t.Errorf("Put: %v; want an error wrapping ErrReadOnly", err)
	}
	if err := s.Delete(t.Context(), "f"); !errors.Is(err, layout.ErrReadOnly) {
		t.Errorf("Delete: %v; want an error wrapping ErrReadOnly", err)
	}
}
