package portlease

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestLeasedPortIsNotHandedOutAgain(t *testing.T) {
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)

	// This process holds it: a second lease of it fails.
	ok, err := lease(port)
	if err != nil || ok {
		t.Fatalf("lease(%d) again in the holding process = %v, %v; want false, nil", port, ok, err)
	}
	// So does another process's (this test binary again, in
	// TestLeaseFromAnotherProcess): it exits 3 when the lease was refused.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseFromAnotherProcess$")
	cmd.Env = append(os.Environ(), "KUBEPLUG_TEST_LEASE_PORT="+p)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("another process leasing port %d while this one holds it: %v, want exit status 3\n%s", port, err, out)
	}
	// Nothing listens there until the test's server binds it.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("bind the leased %s: %v", addr, err)
	}
	l.Close()
}

// TestLeaseFromAnotherProcess is TestLeasedPortIsNotHandedOutAgain's second
// process; alone, it does nothing.
func TestLeaseFromAnotherProcess(t *testing.T) {
	p := os.Getenv("KUBEPLUG_TEST_LEASE_PORT")
	if p == "" {
		return
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := lease(port)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		os.Exit(3)
	}
}
