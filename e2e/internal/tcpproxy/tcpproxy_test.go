package tcpproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on a loopback port until t ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through c and reads it back.
func roundTrip(c net.Conn) error {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

// TestProxy: Break closes the open connections and lets new ones through;
// Cut closes them and refuses new ones until Heal; SetTarget sends new
// connections elsewhere.
func TestProxy(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	addr := p.Addr()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if n := p.Break(0); n != 1 {
		t.Errorf("Break closed %d connections, want 1", n)
	}
	if err := roundTrip(c); err == nil {
		t.Error("a broken connection still answers")
	}
	c = dial()
	if err := roundTrip(c); err != nil {
		t.Fatalf("a new connection after Break: %v", err)
	}
	p.Cut()
	if err := roundTrip(c); err == nil {
		t.Error("a cut connection still answers")
	}
	if err := roundTrip(dial()); err == nil {
		t.Error("a connection made while cut answers")
	}
	p.Heal()
	if err := roundTrip(dial()); err != nil {
		t.Errorf("a connection after Heal: %v", err)
	}
	p.Cut()
	p.SetTarget(echo(t))
	p.Heal()
	if err := roundTrip(dial()); err != nil {
		t.Errorf("a connection after SetTarget: %v", err)
	}
	if n := p.Open(); n != 1 {
		t.Errorf("%d connections open, want the one made after SetTarget", n)
	}
}
