package faults

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kubeplug/kubeplug/host/csi/csitest"
)

// TestCSIFaults: each mode of the driver's fault knob answers DeleteVolume
// as it says, and the check sees every call on arrival, answered or not.
func TestCSIFaults(t *testing.T) {
	d := csitest.New("faults.test")
	var mu sync.Mutex
	var checked []string
	f := &csiFaults{check: func(id string) { mu.Lock(); checked = append(checked, id); mu.Unlock() }}
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	stop, err := d.Serve(sock, f.interceptor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cc := csipb.NewControllerClient(conn)
	del := func(id string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		_, err := cc.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: id})
		return err
	}
	has := func(id string) bool {
		for _, v := range d.Volumes() {
			if v == id {
				return true
			}
		}
		return false
	}

	a, b, c := d.AddVolume("a"), d.AddVolume("b"), d.AddVolume("c")
	f.set(csiFail, 0)
	if err := del(a, time.Minute); status.Code(err) != codes.Unavailable || !has(a) {
		t.Errorf("failing: %v, volume kept %v; want Unavailable and the volume kept", err, has(a))
	}
	f.set(csiHang, 0)
	if err := del(a, 200*time.Millisecond); status.Code(err) != codes.DeadlineExceeded || !has(a) {
		t.Errorf("timing out: %v, volume kept %v; want DeadlineExceeded and the volume kept", err, has(a))
	}
	// Slow: the caller gives up first, and the volume goes anyway.
	f.set(csiSlow, time.Second)
	if err := del(b, 100*time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("slow, caller gone: %v, want DeadlineExceeded", err)
	}
	deadline := time.Now().Add(time.Minute)
	for has(b) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if has(b) {
		t.Error("slow: the volume was not deleted after the caller gave up")
	}
	f.set(csiOK, 0)
	if err := del(c, time.Minute); err != nil || has(c) {
		t.Errorf("healed: %v, volume kept %v", err, has(c))
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{a, a, b, c}; len(checked) != len(want) {
		t.Errorf("checked %v, want %v", checked, want)
	}
}
