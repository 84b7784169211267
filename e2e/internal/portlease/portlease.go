// Package portlease hands out loopback ports that no other test process on
// the machine is handed at the same time.
//
// A test gives a port to a server it starts later or in another process
// (the host's metrics, probe and webhook addresses, etcd's client URL), so
// it must pick the port before the server binds it. Between the pick and
// the bind another test process can pick the same port: go test runs
// packages side by side, and a fault campaign's replay runs beside the
// campaign. So each picked port is leased for the life of the process, with
// an flock on a file named for it that the kernel drops when the process
// ends, however it ends, and a port leased elsewhere is not handed out again.
package portlease

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// portLeaseDir holds one lock file per leased port.
var portLeaseDir = filepath.Join(os.TempDir(), "kubeplug-e2e-ports")

// maxPortPicks bounds the picks of one Addr: every pick the kernel
// makes being leased already means something other than a collision.
const maxPortPicks = 64

var (
	leaseMu sync.Mutex
	leases  []*os.File // held open: closing one ends its lease
)

// Addr returns 127.0.0.1:port, a port nothing listened on when the kernel
// picked it and that no other caller of Addr or Port on this machine holds.
func Addr() (string, error) {
	addr, _, err := pick()
	return addr, err
}

// Port is Addr's port.
func Port() (int, error) {
	_, port, err := pick()
	return port, err
}

func pick() (string, int, error) {
	if err := os.MkdirAll(portLeaseDir, 0o777); err != nil {
		return "", 0, fmt.Errorf("port leases: %w", err)
	}
	for range maxPortPicks {
		addr, port, err := kernelPick()
		if err != nil {
			return "", 0, err
		}
		ok, err := lease(port)
		if err != nil {
			return "", 0, err
		}
		if ok {
			return addr, port, nil
		}
	}
	return "", 0, fmt.Errorf("port leases: %d ports in a row picked by the kernel were leased already; look for stale holders in %s", maxPortPicks, portLeaseDir)
}

func kernelPick() (string, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, err
	}
	defer l.Close()
	return l.Addr().String(), l.Addr().(*net.TCPAddr).Port, nil
}

// lease takes port's lock without waiting; it reports false when a process,
// this one included, holds it.
func lease(port int) (bool, error) {
	f, err := os.OpenFile(filepath.Join(portLeaseDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false, fmt.Errorf("port leases: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("port leases: lock %s: %w", f.Name(), err)
	}
	leaseMu.Lock()
	leases = append(leases, f)
	leaseMu.Unlock()
	return true, nil
}
