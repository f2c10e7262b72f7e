package modfetch

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// tlsServer starts an httptest server with a certificate of ca for
// 127.0.0.1 and localhost.
func tlsServer(t *testing.T, ca *testca.CA, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// files serves fixed bodies by URL path; 404 for another path or a nil
// body.
type files map[string][]byte

func (m files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := m[r.URL.Path]
	if !ok || body == nil {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(body)
}

// readTree describes every entry under dir: a directory as "dir", a link
// as "-> target", a file as its permissions and content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %v", info.Mode().Perm())
		default:
			body, err := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%v %s", info.Mode().Perm(), body)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Tar entries other than regular files, for targz.Pack.
func tarDir(name string) targz.Entry {
	return targz.Entry{Header: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o700}}
}

func tarSymlink(name, target string) targz.Entry {
	return targz.Entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

func tarHardlink(name, target string) targz.Entry {
	return targz.Entry{Header: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644}}
}

func tarExec(name, content string) targz.Entry {
	e := targz.Regular(name, content)
	e.Header.Mode = 0o700
	return e
}

func tarOfType(name string, typ byte) targz.Entry {
	return targz.Entry{Header: tar.Header{Typeflag: typ, Name: name, Mode: 0o644}}
}

// paxGlobal is the header git archive (and so GitHub) puts first.
func paxGlobal() targz.Entry {
	return targz.Entry{Header: tar.Header{
		Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": "1a2b3c4d5e6f"},
	}}
}
