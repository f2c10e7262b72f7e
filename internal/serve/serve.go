package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
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
	// Limits, each taking its default (see Defaults) when zero.
	Limits Limits
}

// Limits bound what one client can hold.
type Limits struct {
	// HeaderTimeout bounds the TLS handshake and the first request's
	// headers together, from the moment a connection is accepted, and
	// the headers of each later request.
	HeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request; mirror requests are GETs
	// without a body.
	ReadTimeout time.Duration
	// StallTimeout bounds each write of a response: the write deadline
	// moves forward as the client reads, so a large archive may take as
	// long as it needs on a slow link, but a client that stops reading is
	// dropped. There is no timeout on a whole response.
	StallTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// MaxConns bounds open connections. When it is reached, the
	// connection idle the longest, else the one that has waited the
	// longest for its handshake or first headers, is closed to make room;
	// when every one is serving a request, a new one waits.
	MaxConns int
	// MaxConnsPerClient bounds the open connections of one client IP
	// address the same way, but a new connection of a client whose
	// connections are all serving requests is closed at once.
	MaxConnsPerClient int
}

// Defaults are the limits a zero Limits field takes:
//   - HeaderTimeout 10s: headers are a few hundred bytes; slower is an
//     attack on the connection limit.
//   - ReadTimeout 30s: requests have no body.
//   - StallTimeout 60s: a client that reads nothing for a minute is gone.
//   - IdleTimeout 30s: long enough for one "tofu init" to reuse its
//     connections, short enough that idle ones do not keep others waiting.
//   - MaxConns: half the file descriptors the process may open, less a
//     reserve (each connection can hold one, and one more for the file it
//     is sent), between 16 and 1024; 1024 where the limit is unknown.
//   - MaxConnsPerClient 32: a client (a "tofu init", a CI runner behind
//     one address) needs a few connections at once; more from one address
//     is a flood.
func Defaults() Limits {
	return Limits{
		HeaderTimeout:     10 * time.Second,
		ReadTimeout:       30 * time.Second,
		StallTimeout:      60 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxConns:          defaultMaxConns(),
		MaxConnsPerClient: 32,
	}
}

func (l Limits) withDefaults() Limits {
	d := Defaults()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	l.HeaderTimeout = pick(l.HeaderTimeout, d.HeaderTimeout)
	l.ReadTimeout = pick(l.ReadTimeout, d.ReadTimeout)
	l.StallTimeout = pick(l.StallTimeout, d.StallTimeout)
	l.IdleTimeout = pick(l.IdleTimeout, d.IdleTimeout)
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = min(d.MaxConnsPerClient, l.MaxConns)
	}
	return l
}

// Server is a running server.
type Server struct {
	URL  string // https://host:port/
	srv  *http.Server
	root *os.Root
	done chan error
}

// Start listens and serves until ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.Root, err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	lim := cfg.Limits.withDefaults()
	limited := newConnLimiter(ln, lim)
	srv := &http.Server{
		ConnState:         limited.connState,
		Handler:           handler(root, cfg.Log, lim.StallTimeout),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cfg.Certificate}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: lim.HeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      0, // see Limits.StallTimeout
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// A failed TLS handshake or a broken connection is the peer's
		// business: never a line on standard error, which --json keeps
		// to one line, and which any peer could flood.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	s := &Server{URL: "https://" + ln.Addr().String() + "/", srv: srv, root: root, done: make(chan error, 1)}
	go s.serve(limited)
	go func() {
		<-ctx.Done()
		_ = s.Close()
	}()
	return s, nil
}

func (s *Server) serve(ln net.Listener) {
	err := s.srv.ServeTLS(ln, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	_ = s.root.Close()
	s.done <- err
}

// Close stops the server, letting requests in flight finish for a moment.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Wait returns when the server has stopped.
func (s *Server) Wait() error { return <-s.done }

// Handler serves the tree at root as a static mirror, with the default
// StallTimeout.
func Handler(root *os.Root, log io.Writer) http.Handler {
	return handler(root, log, Defaults().StallTimeout)
}

func handler(root *os.Root, log io.Writer, stall time.Duration) http.Handler {
	files := http.FileServer(newSiteFS(root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &response{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall, status: http.StatusOK}
		rec.extend()
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(rec, "method not allowed", http.StatusMethodNotAllowed)
		case hidden(r.URL.Path):
			http.NotFound(rec, r)
		case r.URL.Path == "/" || r.URL.Path == "/"+catalogPage:
			page(rec, r, root)
		default:
			w.Header().Set("Content-Type", contentType(r.URL.Path))
			if loc, ok := moduleLocation(root, r.URL.Path); ok {
				w.Header().Set("X-Terraform-Get", loc)
			}
			files.ServeHTTP(rec, r)
		}
		if log != nil {
			fmt.Fprintf(log, "%s %s %d\n", r.Method, r.URL.Path, rec.status)
		}
	})
}

// catalogPage is the tree's catalog page, served at "/" too.
const catalogPage = htmlcatalog.Path

// page serves the catalog page, at "/" and at its own name (a file
// server would redirect the second to the first).
func page(w http.ResponseWriter, r *http.Request, root *os.Root) {
	f, err := newSiteFS(root).Open(catalogPage)
	if err != nil {
		http.Error(w, "this mirror has no catalog page (tfmirror build writes index.html)", http.StatusNotFound)
		return
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, catalogPage, info.ModTime(), f)
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

// contentType is the tree's media type of a file (layout.MediaType), and
// application/json for the extensionless documents of a registry replica
// (versions, download/OS/ARCH).
func contentType(p string) string {
	if (strings.Contains(p, "/v1/providers/") || strings.Contains(p, "/v1/modules/")) && path.Ext(p) == "" {
		return "application/json"
	}
	return layout.MediaType(p)
}

// siteFS opens regular files beneath the root and nothing else: no
// directory (so no listings), pipe or device, and no link that leads out of
// the root, which os.Root refuses. Every refusal is a 404.
type siteFS struct {
	root *os.Root
	dir  string // the root's real path, or "" if unknown
}

func newSiteFS(root *os.Root) siteFS {
	dir, err := filepath.EvalSymlinks(root.Name())
	if err == nil {
		dir, err = filepath.Abs(dir)
	}
	if err != nil {
		dir = ""
	}
	return siteFS{root: root, dir: dir}
}

func (s siteFS) Open(name string) (http.File, error) {
	rel := strings.TrimPrefix(path.Clean("/"+name), "/")
	if rel == "" {
		return nil, fs.ErrNotExist
	}
	f, err := s.open(filepath.FromSlash(rel))
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// open opens rel through the root, at the path its links resolve to:
// os.Root refuses a link to an absolute path even when it points inside
// the root, and a link inside the root may lead to what is never served
// (tfmirror's private directory, a dot file): the resolved path is held
// to the same rule as the request's, and opened again through the root,
// which still refuses what is outside.
func (s siteFS) open(rel string) (*os.File, error) {
	if s.dir == "" {
		return nil, fs.ErrNotExist // links cannot be followed safely
	}
	real, err := filepath.EvalSymlinks(filepath.Join(s.dir, rel))
	if err != nil {
		return nil, err
	}
	inside, err := filepath.Rel(s.dir, real)
	if err != nil || !filepath.IsLocal(inside) || hidden("/"+filepath.ToSlash(inside)) {
		return nil, fs.ErrNotExist
	}
	return s.openRegular(inside)
}

func (s siteFS) openRegular(rel string) (*os.File, error) {
	// O_NONBLOCK: opening a pipe must not wait for a writer.
	f, err := s.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// response records the status for the log, and moves the write deadline
// forward before each write (Limits.StallTimeout). It has no ReadFrom, so
// files are sent in buffer-sized writes, each under its own deadline.
type response struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration
	status int
}

func (r *response) extend() { _ = r.rc.SetWriteDeadline(time.Now().Add(r.stall)) }

func (r *response) Write(p []byte) (int, error) {
	r.extend()
	return r.ResponseWriter.Write(p)
}

func (r *response) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer.
func (r *response) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// moduleLocation reads the location of a module registry download
// document, which Terraform takes only from the X-Terraform-Get header.
func moduleLocation(root *os.Root, p string) (string, bool) {
	if !strings.HasPrefix(p, "/replica/") || !strings.Contains(p, "/v1/modules/") || path.Base(p) != "download" {
		return "", false
	}
	f, err := newSiteFS(root).Open(p)
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	var doc struct {
		Location string `json:"location"`
	}
	if json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&doc) != nil || doc.Location == "" || strings.ContainsAny(doc.Location, "\r\n") {
		return "", false
	}
	return doc.Location, true
}
