package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

// Config says what to serve and how.
type Config struct {
	Root string // the mirror tree
	Addr string // host:port to listen on; port 0 picks a free one
	// Certificate is the server's TLS certificate.
	Certificate tls.Certificate
	// Log, if set, gets one line per request.
	Log io.Writer
}

// Server is a running server.
type Server struct {
	URL  string // https://host:port/
	srv  *http.Server
	done chan error
}

// Start listens and serves until ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           Handler(cfg.Root, cfg.Log),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cfg.Certificate}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}
	s := &Server{URL: "https://" + ln.Addr().String() + "/", srv: srv, done: make(chan error, 1)}
	go func() {
		err := srv.ServeTLS(ln, "", "")
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	go func() {
		<-ctx.Done()
		_ = s.Close()
	}()
	return s, nil
}

// Close stops the server, letting requests in flight finish for a moment.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Wait returns when the server has stopped.
func (s *Server) Wait() error { return <-s.done }

// Handler serves the tree at root as a static mirror.
func Handler(root string, log io.Writer) http.Handler {
	files := http.FileServer(noListing{http.Dir(root)})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(rec, "method not allowed", http.StatusMethodNotAllowed)
		case hidden(r.URL.Path):
			http.NotFound(rec, r)
		default:
			w.Header().Set("Content-Type", contentType(r.URL.Path))
			files.ServeHTTP(rec, r)
		}
		if log != nil {
			fmt.Fprintf(log, "%s %s %d\n", r.Method, r.URL.Path, rec.status)
		}
	})
}

// hidden reports paths clients never need: tfmirror's private directory
// and dot files.
func hidden(p string) bool {
	for _, part := range strings.Split(path.Clean(p), "/") {
		if part == layout.PrivateDirName || strings.HasPrefix(part, ".") && part != ".well-known" {
			return true
		}
	}
	return false
}

// contentType is application/json for JSON documents, including the
// extensionless documents of a registry replica (versions, download/OS/ARCH).
func contentType(p string) string {
	switch ext := path.Ext(p); {
	case ext == ".json":
		return "application/json"
	case ext == ".zip":
		return "application/zip"
	case strings.Contains(p, "/v1/providers/") && ext == "":
		return "application/json"
	case ext != "":
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

// noListing refuses to open directories, so there are no listings.
type noListing struct{ fs http.FileSystem }

func (n noListing) Open(name string) (http.File, error) {
	f, err := n.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err == nil && info.IsDir() {
		_ = f.Close()
		return nil, fs.ErrNotExist // a directory is not a resource
	}
	return f, nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
