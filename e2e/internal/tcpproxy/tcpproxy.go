// Package tcpproxy is a TCP proxy in front of kube-apiserver with a kill
// switch. The control plane keeps one in front of kube-apiserver, so that
// its address outlives a restart of the server behind it (SetTarget); the
// fault campaign puts one in front of each host, so that it can cut that
// host off the API server (a partition: its Lease cannot be renewed), cut
// every host off at once (an API server outage), or close the connections
// that carry its watches. TLS passes through untouched: a client still
// verifies the API server's certificate.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards the connections it accepts on a loopback port to its
// target.
type Proxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	cut    bool
	conns  map[*conn]struct{}
}

// conn is one proxied connection, both of its sockets.
type conn struct {
	down, up net.Conn
	since    time.Time
}

func (c *conn) close() { c.down.Close(); c.up.Close() }

// New listens on a loopback port and forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*conn]struct{}{}}
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the address a client uses instead of the API server's.
func (p *Proxy) URL() string { return "https://" + p.Addr() }

// SetTarget sends the connections accepted from now on to target; those
// open stay where they are.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
}

// Cut closes every connection and refuses new ones until Heal: a client
// behind it sees the API server gone (connection refused is not what a
// partition gives, but a closed connection at once is what both an
// outage and a partition give a client that retries).
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[*conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.close()
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Break closes the connections open for at least age, without refusing
// new ones: the watches they carry end mid-stream, as when a load balancer
// or an API server's graceful termination drops long-lived connections.
// It returns how many it closed.
func (p *Proxy) Break(age time.Duration) int {
	p.mu.Lock()
	var old []*conn
	for c := range p.conns {
		if time.Since(c.since) >= age {
			old = append(old, c)
			delete(p.conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range old {
		c.close()
	}
	return len(old)
}

// Open is how many connections are open.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(down)
	}
}

func (p *Proxy) forward(down net.Conn) {
	p.mu.Lock()
	cut, target := p.cut, p.target
	p.mu.Unlock()
	if cut {
		down.Close()
		return
	}
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		down.Close()
		return
	}
	c := &conn{down: down, up: up, since: time.Now()}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
