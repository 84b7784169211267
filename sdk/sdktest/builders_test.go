package sdktest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

func TestStatefulSet(t *testing.T) {
	set := sdktest.StatefulSet("web", 3,
		sdktest.Storage("10Gi"), sdktest.Templates("data", "logs"), sdktest.StorageClassName("fast"),
		sdktest.Retention("Delete", "Retain"), sdktest.OrdinalStart(2), sdktest.Labels("tier", "db"))
	m := set.Metadata
	if m.Name != "web" || m.Namespace != "default" || m.UID != "web-uid" || m.Labels["tier"] != "db" {
		t.Errorf("metadata = %+v", m)
	}
	if set.Spec.Replicas != 3 || set.Status.Replicas != 3 || set.Spec.Ordinals.Start != 2 {
		t.Errorf("spec = %+v", set.Spec)
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != "Delete" || p.WhenScaled != "Retain" {
		t.Errorf("retention = %+v", p)
	}
	ts := set.Spec.VolumeClaimTemplates
	if len(ts) != 2 || ts[0].Metadata.Name != "data" || ts[1].Metadata.Name != "logs" {
		t.Fatalf("templates = %+v", ts)
	}
	for _, tmpl := range ts {
		// Storage was given before Templates, and still applies to both.
		if tmpl.Spec.Resources.Requests["storage"] != "10Gi" || *tmpl.Spec.StorageClassName != "fast" {
			t.Errorf("template %s = %+v", tmpl.Metadata.Name, tmpl.Spec)
		}
	}
	ts[0].Spec.Resources.Requests["storage"] = "1Ti"
	if ts[1].Spec.Resources.Requests["storage"] != "10Gi" {
		t.Error("templates share their requests")
	}
	if len(sdktest.StatefulSet("web", 1, sdktest.Templates()).Spec.VolumeClaimTemplates) != 0 {
		t.Error("Templates() left templates")
	}
}

func TestPodAndClaim(t *testing.T) {
	set := sdktest.StatefulSet("web", 2, sdktest.Namespace("prod"), sdktest.Templates("data", "logs"), sdktest.Storage("5Gi"))
	pod := sdktest.Pod(set, 1, sdktest.Phase("Pending"))
	if pod.Metadata.Name != "web-1" || pod.Metadata.Namespace != "prod" || pod.Status.Phase != "Pending" {
		t.Errorf("pod = %+v", pod.Metadata)
	}
	if c := sdk.ControllerOf(&pod.Metadata); c == nil || c.UID != set.Metadata.UID {
		t.Errorf("pod controller = %+v, want the set", c)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[1].ClaimName != "logs-web-1" {
		t.Errorf("pod volumes = %+v", pod.Spec.Volumes)
	}

	claim := sdktest.Claim("logs", set, 1)
	if claim.Metadata.Name != "logs-web-1" || claim.Metadata.Namespace != "prod" || claim.Metadata.UID != "logs-web-1-uid" || len(claim.Metadata.OwnerReferences) != 0 {
		t.Errorf("claim metadata = %+v", claim.Metadata)
	}
	if claim.Spec.Resources.Requests["storage"] != "5Gi" || claim.Status.Capacity["storage"] != "5Gi" || claim.Status.Phase != "Bound" {
		t.Errorf("claim = %+v / %+v, want the template's 5Gi, bound", claim.Spec, claim.Status)
	}
	claim.Spec.Resources.Requests["storage"] = "1Ti"
	if set.Spec.VolumeClaimTemplates[1].Spec.Resources.Requests["storage"] != "5Gi" {
		t.Error("the claim shares its requests with the template")
	}
	resized := sdktest.Claim("data", set, 0, sdktest.Storage("8Gi"), sdktest.OwnedBy(sdk.NewControllerRef(pod)))
	if resized.Status.Capacity["storage"] != "8Gi" || resized.Metadata.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("claim options not applied: %+v", resized)
	}
}

func TestOptionPanics(t *testing.T) {
	set := sdktest.StatefulSet("web", 1)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"retention on a pod", func() { sdktest.Pod(set, 0, sdktest.Retention("Delete", "Delete")) }, "Retention does not apply to a Pod"},
		{"csi on a claim", func() { sdktest.Claim("data", set, 0, sdktest.CSI("d", "h")) }, "CSI does not apply to a PersistentVolumeClaim"},
		{"odd labels", func() { sdktest.StatefulSet("web", 1, sdktest.Labels("a")) }, "key, value pairs"},
		{"unknown request argument", func() { sdktest.Request(now, "web") }, "cannot use string"},
		{"two sets", func() { sdktest.Request(now, set, set) }, "one subject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if s, _ := recover().(string); !strings.Contains(s, tt.want) {
					t.Errorf("panic %q, want %q", s, tt.want)
				}
			}()
			tt.f()
		})
	}
}

func TestRequest(t *testing.T) {
	set := sdktest.StatefulSet("web", 2)
	claims := []*abi.PersistentVolumeClaim{sdktest.Claim("data", set, 1), sdktest.Claim("data", set, 0)}
	req := sdktest.Request(now, set, claims, sdktest.Pod(set, 0), sdktest.Config(`{"a": 1}`))
	if req.Subject != abi.SubjectStatefulSet || req.Key != "default/web" || req.Now != "2025-03-01T12:00:00Z" || string(req.Config) != `{"a": 1}` {
		t.Errorf("request = %+v", req)
	}
	s := req.StatefulSet
	if s.Set.Metadata.Name != "web" || len(s.Pods) != 1 || len(s.Claims) != 2 || s.Claims[0].Metadata.Name != "data-web-0" {
		t.Errorf("subject = %+v, want claims sorted by name", s)
	}
	set.Spec.Replicas = 9
	if s.Set.Spec.Replicas != 2 {
		t.Error("the request shares the set with the caller")
	}

	pv := sdktest.PersistentVolume("pv-1", sdktest.CSI("csi.example.com", "vol-1"), sdktest.BoundTo(claims[0]), sdktest.ReclaimPolicy("Retain"))
	req = sdktest.Request(now, pv, claims[0], sdktest.Drivers{"csi.example.com"}, sdktest.Key("other"))
	p := req.PersistentVolume
	if req.Subject != abi.SubjectPersistentVolume || req.Key != "other" || p.Claim.Metadata.Name != "data-web-1" || p.Drivers[0] != "csi.example.com" {
		t.Errorf("request = %+v / %+v", req, p)
	}
	if v := p.Volume; v.Spec.CSI.VolumeHandle != "vol-1" || v.Spec.ClaimRef.UID != "data-web-1-uid" || v.Status.Phase != "Bound" || v.Spec.PersistentVolumeReclaimPolicy != "Retain" {
		t.Errorf("volume = %+v", v)
	}
	if sdktest.Request(now).Now != "2025-03-01T12:00:00Z" || sdktest.Request(now.In(fixedZone)).Now != "2025-03-01T12:00:00Z" {
		t.Error("now is not in UTC")
	}
}

func TestMinReadySecondsAndReadySince(t *testing.T) {
	set := sdktest.StatefulSet("web", 1, sdktest.MinReadySeconds(30))
	if set.Spec.MinReadySeconds != 30 {
		t.Errorf("minReadySeconds = %d, want 30", set.Spec.MinReadySeconds)
	}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	pod := sdktest.Pod(set, 0, sdktest.ReadySince(at))
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0] != (abi.Condition{Type: "Ready", Status: "True", LastTransitionTime: "2026-01-01T11:00:00Z"}) {
		t.Errorf("conditions = %+v, want one Ready since 11:00 UTC", pod.Status.Conditions)
	}
}
