package testenv

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// Gate is a TCP proxy to the API server that holds every connection until
// Open: a way to keep a host's caches from syncing for as long as a test
// needs, without timing anything.
type Gate struct {
	ln     net.Listener
	target string
	open   chan struct{}
	once   sync.Once
}

// NewGate proxies to server (the API server's URL, e.g. https://127.0.0.1:6443)
// and stops when t ends.
func NewGate(t testing.TB, server string) *Gate {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{ln: ln, target: u.Host, open: make(chan struct{})}
	go g.serve()
	t.Cleanup(func() { g.Open(); ln.Close() })
	return g
}

// URL is the address to use instead of the API server's.
func (g *Gate) URL() string { return "https://" + g.ln.Addr().String() }

// Open lets held and new connections through.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

func (g *Gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			<-g.open
			up, err := net.Dial("tcp", g.target)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c) }()
			_, _ = io.Copy(c, up)
		}()
	}
}

// KubeconfigVia writes a copy of the kubeconfig at path whose clusters use
// server instead, keeping the TLS server name, and returns the copy's path.
func KubeconfigVia(t testing.TB, path, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		if c.TLSServerName == "" {
			c.TLSServerName = u.Hostname()
		}
		c.Server = server
	}
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}
