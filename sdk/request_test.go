package sdk_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

func newRequest(t *testing.T, in *abi.ReconcileRequest) *sdk.Request {
	t.Helper()
	req, err := sdk.NewRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRequestStatefulSet(t *testing.T) {
	set := sdktest.StatefulSet("web", 2, sdktest.Namespace("prod"), sdktest.Templates("data", "logs"), sdktest.StorageClassName("fast"))
	req := newRequest(t, sdktest.Request(now, set,
		sdktest.Pod(set, 0), sdktest.Pod(set, 1),
		sdktest.Claim("logs", set, 0), sdktest.Claim("data", set, 1), sdktest.Claim("data", set, 0),
		sdktest.StorageClass("fast", "csi.example.com"),
	))

	if !req.Now().Equal(now) {
		t.Errorf("Now() = %v, want %v", req.Now(), now)
	}
	if req.Subject() != abi.SubjectStatefulSet || req.Key() != "prod/web" || req.Namespace() != "prod" || req.Name() != "web" {
		t.Errorf("subject %q key %q namespace %q name %q", req.Subject(), req.Key(), req.Namespace(), req.Name())
	}
	if req.StatefulSet() == nil || req.StatefulSet().Metadata.Name != "web" || len(req.Pods()) != 2 || len(req.Claims()) != 3 || len(req.StorageClasses()) != 1 {
		t.Fatal("accessors do not return the request's objects")
	}
	if req.PersistentVolume() != nil || req.BoundClaim() != nil || req.Drivers() != nil || req.ClaimUpdate() != nil {
		t.Error("accessors of the other subject return objects")
	}

	lookups := []struct {
		name string
		got  string // name found, "" for nil
		want string
	}{
		{"claim by name", nameOf(req.Claim("logs-web-0")), "logs-web-0"},
		{"missing claim", nameOf(req.Claim("logs-web-1")), ""},
		{"claim by template and ordinal", nameOf(req.ClaimFor("data", 1)), "data-web-1"},
		{"pod by ordinal", podName(req.Pod(1)), "web-1"},
		{"missing pod", podName(req.Pod(2)), ""},
		{"storage class", classOf(req.StorageClass("fast")), "fast"},
		{"missing storage class", classOf(req.StorageClass("slow")), ""},
	}
	for _, l := range lookups {
		if l.got != l.want {
			t.Errorf("%s: got %q, want %q", l.name, l.got, l.want)
		}
	}
	// Lookups return the request's own objects, not copies.
	if req.Claim("data-web-0") != &req.Claims()[0] {
		t.Error("Claim returned a copy")
	}
}

func TestRequestStatefulSetGone(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	req := newRequest(t, sdktest.Request(now, sdktest.Pod(set, 0), sdktest.Claim("data", set, 0), sdktest.Key("default/web")))
	if req.StatefulSet() != nil {
		t.Fatal("StatefulSet() is not nil")
	}
	// Pods and claims are still found by the set's name, taken from the key.
	if podName(req.Pod(0)) != "web-0" || nameOf(req.ClaimFor("data", 0)) != "data-web-0" {
		t.Error("lookups fail without the set")
	}
}

func TestRequestPersistentVolume(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	claim := sdktest.Claim("data", set, 0)
	pv := sdktest.PersistentVolume("pv-1", sdktest.BoundTo(claim), sdktest.StorageClassName("fast"))
	req := newRequest(t, sdktest.Request(now, pv, claim, sdktest.StorageClass("fast", "csi.example.com"), sdktest.Drivers{"csi.example.com"}))
	if req.Subject() != abi.SubjectPersistentVolume || req.Key() != "pv-1" || req.Namespace() != "" || req.Name() != "pv-1" {
		t.Errorf("subject %q key %q namespace %q name %q", req.Subject(), req.Key(), req.Namespace(), req.Name())
	}
	if req.PersistentVolume() == nil || nameOf(req.BoundClaim()) != "data-web-0" || len(req.Drivers()) != 1 || classOf(req.StorageClass("fast")) != "fast" {
		t.Error("persistentvolume accessors do not return the request's objects")
	}
	if req.StatefulSet() != nil || req.Pods() != nil || req.Claims() != nil || req.Claim("data-web-0") != nil || req.Pod(0) != nil {
		t.Error("statefulset accessors return objects")
	}
}

func TestNewRequestTime(t *testing.T) {
	tests := []struct {
		name string
		now  string
		want time.Time
		err  error
	}{
		{"nanoseconds", "2025-03-01T12:00:00.123456789Z", now, nil},
		{"seconds", "2025-03-01T12:00:00Z", now.Truncate(time.Second), nil},
		{"offset", "2025-03-01T13:00:00+01:00", now.Truncate(time.Second), nil},
		{"absent", "", time.Time{}, nil},
		{"garbage", "yesterday", time.Time{}, sdk.ErrBadNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := sdk.NewRequest(&abi.ReconcileRequest{Now: tt.now})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && !req.Now().Equal(tt.want) {
				t.Errorf("Now() = %v, want %v", req.Now(), tt.want)
			}
		})
	}
}

func nameOf(c *abi.PersistentVolumeClaim) string {
	if c == nil {
		return ""
	}
	return c.Metadata.Name
}

func podName(p *abi.Pod) string {
	if p == nil {
		return ""
	}
	return p.Metadata.Name
}

func classOf(c *abi.StorageClass) string {
	if c == nil {
		return ""
	}
	return c.Metadata.Name
}
