//go:build unix

package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

type testServer struct {
	srv  *Server
	addr string
	tls  *tls.Config
}

func startServer(t *testing.T, root string, lim Limits) testServer {
	t.Helper()
	caPEM, cert, err := SelfSigned([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, Config{Root: root, Addr: "127.0.0.1:0", Certificate: cert, Limits: lim})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	u := srv.URL[len("https://") : len(srv.URL)-1]
	return testServer{srv: srv, addr: u, tls: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}}
}

func (s testServer) client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tls}}
}

func (s testServer) dial(t *testing.T) *tls.Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.addr, s.tls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServeOnlyServesTheSite(t *testing.T) {
	site, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(site, "a", "index.json"), []byte(`{"versions":{}}`))
	writeFile(t, filepath.Join(outside, "passwd"), []byte("root:x:0:0"))
	writeFile(t, filepath.Join(site, ".tfmirror", "serve-ca-key.pem"), []byte("PRIVATE KEY"))
	writeFile(t, filepath.Join(site, ".hidden"), []byte("dot file"))
	links := map[string]string{
		"key.pem":      ".tfmirror/serve-ca-key.pem", // the private directory, through a link
		"abskey.pem":   filepath.Join(site, ".tfmirror", "serve-ca-key.pem"),
		"priv":         ".tfmirror",
		"dot.json":     ".hidden",
		"inside.json":  filepath.Join(site, "a", "index.json"),
		"a/rel.json":   "index.json",
		"passwd.json":  filepath.Join(outside, "passwd"),
		"up.json":      "../" + filepath.Base(outside) + "/passwd",
		"etc":          "/etc",
		"a/outside":    outside,
		"a/dotdot.zip": "../../" + filepath.Base(outside) + "/passwd",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(site, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(site, "fifo.zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, site, Limits{})
	for path, want := range map[string]int{
		"a/index.json":          http.StatusOK,
		"inside.json":           http.StatusOK, // links inside the site are fine
		"a/rel.json":            http.StatusOK,
		"passwd.json":           http.StatusNotFound,
		"up.json":               http.StatusNotFound,
		"etc/passwd":            http.StatusNotFound,
		"a/outside/passwd":      http.StatusNotFound,
		"a/dotdot.zip":          http.StatusNotFound,
		"fifo.zip":              http.StatusNotFound,
		"a/":                    http.StatusNotFound,
		"key.pem":               http.StatusNotFound,
		"abskey.pem":            http.StatusNotFound,
		"priv/serve-ca-key.pem": http.StatusNotFound,
		"dot.json":              http.StatusNotFound,
	} {
		resp, err := s.client().Get(s.srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}

// get sends one keep-alive request on conn and reads the whole response.
func get(t *testing.T, conn net.Conn, path string) {
	t.Helper()
	if _, err := fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := conn.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && (!errors.As(err, &ne) || !ne.Timeout())
}

func TestServeClosesIdleConnections(t *testing.T) {
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "index.json"), []byte("{}"))
	s := startServer(t, site, Limits{IdleTimeout: 300 * time.Millisecond, HeaderTimeout: 300 * time.Millisecond})

	conn := s.dial(t)
	get(t, conn, "index.json")
	start := time.Now()
	if !closedWithin(conn, 5*time.Second) {
		t.Fatal("an idle keep-alive connection was not closed")
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", d)
	}

	// A connection that never says anything is closed too.
	raw, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if !closedWithin(raw, 5*time.Second) {
		t.Error("a silent connection was not closed")
	}
}

func TestServeLimitsConnections(t *testing.T) {
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "index.json"), []byte("{}"))
	writeFile(t, filepath.Join(site, "big.zip"), make([]byte, 64<<20))
	s := startServer(t, site, Limits{MaxConns: 2, IdleTimeout: time.Minute})

	// Two idle keep-alive connections make room for a third: the one
	// idle the longest is closed.
	first, second := s.dial(t), s.dial(t)
	get(t, first, "index.json")
	// The server marks a connection idle after it has sent the response:
	// a pause makes first's idleness clearly the older.
	time.Sleep(50 * time.Millisecond)
	get(t, second, "index.json")
	third := s.dial(t)
	get(t, third, "index.json")
	if !closedWithin(first, 5*time.Second) {
		t.Fatal("the connection idle the longest was not closed to make room")
	}
	get(t, second, "index.json")

	// Two connections serving a request (a large response nobody reads)
	// are never closed for room: a third waits, unserved.
	for _, c := range []net.Conn{second, third} {
		if _, err := fmt.Fprintf(c, "GET /big.zip HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	waiting, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	tc := tls.Client(waiting, s.tls)
	_ = waiting.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if err := tc.Handshake(); err == nil {
		t.Fatal("a third connection was served while MaxConns 2 were serving requests")
	}
	waiting.Close()

	// Once one closes, the next is served: as soon as the server has seen
	// the close (its write to the closed connection fails), which takes a
	// moment; a connection accepted before that is closed to make room.
	third.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := tryGet(s, "index.json")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection was served within 5 s of one closing: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tryGet dials the server and gets path, returning what went wrong.
func tryGet(s testServer, path string) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.addr, s.tls)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// slowFlood opens n TCP connections to addr, from the loopback addresses
// 127.0.0.<first> to 127.0.0.<first+clients-1> in turn, that each send the
// start of a TLS ClientHello and then nothing: clients that never finish
// their handshake. They are closed when the test ends.
func slowFlood(t *testing.T, addr string, n, first, clients int) {
	t.Helper()
	for i := range n {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(first+i%clients))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00}) // a handshake record of 512 bytes, never sent
	}
}

// A flood of clients that never finish their TLS handshake cannot starve
// a normal one: with 1,000 such connections open, from one address (the
// client's own or another) or from many, a normal client is answered
// within a second. (Before the per-client bound and the eviction of
// waiting connections, it waited for the handshake timeout of the
// connections ahead of it.)
func TestServeSlowClientFlood(t *testing.T) {
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "index.json"), []byte("{}"))
	for _, tc := range []struct {
		name           string
		first, clients int
	}{
		{"one other client", 2, 1},
		{"the client's own address", 1, 1},
		{"many clients", 2, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The default timeouts: the flood holds its connections for
			// the whole test unless room is made.
			s := startServer(t, site, Limits{MaxConns: 256})
			slowFlood(t, s.addr, 1000, tc.first, tc.clients)
			time.Sleep(300 * time.Millisecond) // let the server accept them
			client := s.client()
			client.Timeout = 5 * time.Second
			start := time.Now()
			resp, err := client.Get(s.srv.URL + "index.json")
			took := time.Since(start)
			if err != nil {
				t.Fatalf("a normal client during the flood: %v after %s", err, took)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			t.Logf("answered %s in %s", resp.Status, took)
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Errorf("a normal client during the flood: %s after %s, want 200 OK within a second", resp.Status, took)
			}
		})
	}
}

func TestServeDropsStalledClientsButNotSlowOnes(t *testing.T) {
	site := t.TempDir()
	big := make([]byte, 64<<20)
	writeFile(t, filepath.Join(site, "big.zip"), big)
	writeFile(t, filepath.Join(site, "small.zip"), big[:1<<20])
	s := startServer(t, site, Limits{
		StallTimeout: 500 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, HeaderTimeout: 200 * time.Millisecond,
	})

	// A slow client takes longer than the read timeout and many stall
	// timeouts in all, but always reads within one: it gets everything.
	conn := s.dial(t)
	fmt.Fprintf(conn, "GET /small.zip HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := readSlowly(resp.Body, 64<<10, 100*time.Millisecond)
	if err != nil || n != 1<<20 {
		t.Fatalf("a slow client got %d bytes, %v", n, err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("the slow client took only %v", d)
	}

	// A client that stops reading is dropped.
	stalled := s.dial(t)
	fmt.Fprintf(stalled, "GET /big.zip HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(2 * time.Second)
	_ = stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.Copy(io.Discard, stalled)
	var ne net.Error
	if got >= int64(len(big)) || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("a stalled client was not dropped: %d bytes, %v", got, err)
	}
}

// readSlowly reads r to its end, chunk bytes at a time with a pause before
// each.
func readSlowly(r io.Reader, chunk int, pause time.Duration) (int64, error) {
	buf := make([]byte, chunk)
	var total int64
	for {
		time.Sleep(pause)
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
