package serve

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter is the listener Start serves from: it bounds the connections
// open in total (Limits.MaxConns) and per client IP address
// (Limits.MaxConnsPerClient), and the time a connection may take to finish
// its TLS handshake and the headers of its first request
// (Limits.HeaderTimeout, from the moment it is accepted).
//
// A connection is waiting from its acceptance until its first request's
// headers are read, and again while idle between requests; it is busy
// while a request is served. When a bound is reached, room is made by
// closing a waiting connection: the one idle the longest, else the one
// waiting for its handshake or headers the longest (of the same client,
// for the per-client bound). So slow clients that never finish their
// handshake or headers, however many, cannot keep a normal client out:
// the oldest of them give way to it. Only busy connections are never
// closed to make room: when every connection is busy a new one waits to
// be served (the total bound), or is closed at once (the per-client
// bound).
type connLimiter struct {
	net.Listener
	max, perClient int
	budget         time.Duration

	mu     sync.Mutex
	cond   *sync.Cond // signalled when a connection is released
	conns  map[*trackedConn]struct{}
	byIP   map[string]int
	closed bool
}

func newConnLimiter(ln net.Listener, lim Limits) *connLimiter {
	l := &connLimiter{
		Listener:  ln,
		max:       lim.MaxConns,
		perClient: lim.MaxConnsPerClient,
		budget:    lim.HeaderTimeout,
		conns:     map[*trackedConn]struct{}{},
		byIP:      map[string]int{},
	}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// connPhase is where a connection is in its life.
type connPhase int

const (
	phaseNew  connPhase = iota // accepted, first request's headers not read yet
	phaseBusy                  // serving a request
	phaseIdle                  // between requests
)

// trackedConn is a connection the limiter counts; guarded by its
// limiter's mu, but for the embedded Conn.
type trackedConn struct {
	net.Conn
	l        *connLimiter
	ip       string
	phase    connPhase
	since    time.Time // of the phase
	released bool
	timer    *time.Timer // closes a connection still new after the budget
}

func clientIP(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Accept returns the next connection within the bounds, closing waiting
// connections to make room (see connLimiter).
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// admit registers c, making room as needed, or closes it and returns nil.
func (l *connLimiter) admit(c net.Conn) *trackedConn {
	ip := clientIP(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byIP[ip] >= l.perClient {
		v := l.oldestWaiting(ip)
		if v == nil {
			_ = c.Close()
			return nil
		}
		l.evictLocked(v)
	}
	for len(l.conns) >= l.max && !l.closed {
		if v := l.oldestWaiting(""); v != nil {
			l.evictLocked(v)
			continue
		}
		l.cond.Wait() // every connection is busy: wait for one to end
	}
	if l.closed {
		_ = c.Close()
		return nil
	}
	tc := &trackedConn{Conn: c, l: l, ip: ip, phase: phaseNew, since: time.Now()}
	l.conns[tc] = struct{}{}
	l.byIP[ip]++
	tc.timer = time.AfterFunc(l.budget, func() {
		l.mu.Lock()
		late := !tc.released && tc.phase == phaseNew
		l.mu.Unlock()
		if late {
			_ = tc.Close()
		}
	})
	return tc
}

// evictLocked closes a waiting connection to make room; the server
// serving it finds it closed.
func (l *connLimiter) evictLocked(c *trackedConn) {
	l.releaseLocked(c)
	_ = c.Conn.Close()
}

// Close stops accepting: an Accept waiting for room returns.
func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// oldestWaiting returns the connection (of ip, or of any client for "")
// idle the longest, else the one new the longest; nil when every one is
// busy.
func (l *connLimiter) oldestWaiting(ip string) *trackedConn {
	var idle, fresh *trackedConn
	for c := range l.conns {
		if ip != "" && c.ip != ip {
			continue
		}
		switch c.phase {
		case phaseIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case phaseNew:
			if fresh == nil || c.since.Before(fresh.since) {
				fresh = c
			}
		}
	}
	if idle != nil {
		return idle
	}
	return fresh
}

// releaseLocked stops counting c.
func (l *connLimiter) releaseLocked(c *trackedConn) {
	if c.released {
		return
	}
	c.released = true
	c.timer.Stop()
	delete(l.conns, c)
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
	l.cond.Signal()
}

// Close closes the connection and stops counting it.
func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connState is the server's ConnState hook: it follows each connection
// from new to busy and idle.
func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateActive:
		tc.phase, tc.since = phaseBusy, time.Now()
	case http.StateIdle:
		tc.phase, tc.since = phaseIdle, time.Now()
	}
}
