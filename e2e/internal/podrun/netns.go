package podrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// maxForwarded bounds the connections a pod holds open at once through
// its forwarder to the API server; one more is closed at once. The host
// holds one or two (client-go multiplexes on HTTP/2).
const maxForwarded = 64

// netNS is a pod's network namespace: a loopback interface and nothing
// else, as a pod's own network is, so that two pods may listen on one
// port. The open file keeps the namespace alive until close.
type netNS struct {
	fd int

	mu        sync.Mutex
	listeners []net.Listener
	wg        sync.WaitGroup
}

// onThread runs f on a goroutine locked to its OS thread after enter has
// moved that thread into another network namespace, then moves it back.
// Sockets f opens, and processes it starts, belong to the namespace
// entered. A thread that cannot go back stays locked and so ends with the
// goroutine: no other goroutine ever runs in a pod's namespace.
func onThread(enter func() error, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(home)
		if err := enter(); err != nil {
			runtime.UnlockOSThread() // enter failed: the thread did not move
			errc <- err
			return
		}
		ferr := f()
		if err := unix.Setns(home, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("return to the host's network namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// newNetNS makes a network namespace with its loopback interface up.
// It needs CAP_SYS_ADMIN (root).
func newNetNS() (*netNS, error) {
	n := &netNS{fd: -1}
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("new network namespace: %w", err)
		}
		return nil
	}, func() error {
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open the new network namespace: %w", err)
		}
		n.fd = fd
		return loopbackUp()
	})
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// loopbackUp sets the flag IFF_UP on lo, in the calling thread's network
// namespace: a new namespace's loopback is down.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// do runs f with its thread in the namespace.
func (n *netNS) do(f func() error) error {
	return onThread(func() error {
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter the pod's network namespace: %w", err)
		}
		return nil
	}, f)
}

// dial connects to addr inside the namespace, as the kubelet's probes
// reach a pod's IP.
func (n *netNS) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// forward listens on addr inside the namespace and copies each
// connection to and from target, dialled from the host's namespace: how
// the pod reaches the API server at the address it is given.
func (n *netNS) forward(addr, target string) error {
	var l net.Listener
	if err := n.do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("forward %s in the pod's network namespace to %s: %w", addr, target, err)
	}
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	seats := make(chan struct{}, maxForwarded)
	n.wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case seats <- struct{}{}:
			default:
				in.Close()
				continue
			}
			n.wg.Go(func() {
				defer func() { <-seats }()
				pipe(in, target)
			})
		}
	})
	return nil
}

// pipe copies between in and a new connection to target until either
// side ends, then closes both: a watch the API server keeps open must not
// outlive the pod's end of it.
func pipe(in net.Conn, target string) {
	defer in.Close()
	out, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	in.Close()
	out.Close()
	<-done
}

// close stops the forwarders, waits for their connections to end, and
// lets the namespace go once nothing else holds it (the pod's processes
// are gone by then).
func (n *netNS) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	ls := n.listeners
	n.listeners = nil
	n.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	n.wg.Wait()
	if n.fd >= 0 {
		unix.Close(n.fd)
		n.fd = -1
	}
}
