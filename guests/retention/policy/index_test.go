package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk"
)

// byName is what replicas answered before claimIndex: each replica's claims
// looked up by the name upstream gives them (sdk.Request.ClaimFor), its
// in-range ordinals those of the claims sdk.MatchClaim accepts.
func byName(req *sdk.Request, set *abi.StatefulSet) (inRange, condemned []replica) {
	start, end := sdk.OrdinalRange(set)
	claimsOf := func(ord int) []*abi.PersistentVolumeClaim {
		var out []*abi.PersistentVolumeClaim
		for i := range set.Spec.VolumeClaimTemplates {
			if c := req.ClaimFor(set.Spec.VolumeClaimTemplates[i].Metadata.Name, ord); c != nil {
				out = append(out, c)
			}
		}
		return out
	}
	var ordinals []int
	for _, c := range req.Claims() {
		if _, ord, ok := sdk.MatchClaim(set, c.Metadata.Name); ok && podInOrdinalRange(ord, start, end) {
			ordinals = append(ordinals, ord)
		}
	}
	slices.Sort(ordinals)
	for _, ord := range slices.Compact(ordinals) {
		inRange = append(inRange, replica{ordinal: ord, pod: req.Pod(ord), claims: claimsOf(ord)})
	}
	for i := range req.Pods() {
		pod := &req.Pods()[i]
		name, ord, ok := sdk.ParsePodName(pod.Metadata.Name)
		if ok && name == set.Metadata.Name && !podInOrdinalRange(ord, start, end) {
			if claims := claimsOf(ord); len(claims) > 0 {
				condemned = append(condemned, replica{ordinal: ord, pod: pod, claims: claims})
			}
		}
	}
	slices.SortFunc(condemned, func(a, b replica) int { return b.ordinal - a.ordinal })
	return inRange, condemned
}

// replicas finds the claims a lookup by name finds, on sets and claims
// named to trip it: templates with empty, repeated and dashed names, set
// names that are suffixes of claim names, several claims of one name,
// ordinals with leading zeros, out of range and past int32.
func TestReplicasFindWhatNamesFind(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	for i := range 3000 {
		setName := pick("web", "a-web", "w", "")
		set := &abi.StatefulSet{Metadata: abi.ObjectMeta{Name: setName, UID: "set"}}
		set.Spec.Replicas = int32(rng.IntN(5))
		if rng.IntN(3) == 0 {
			set.Spec.Ordinals = &abi.StatefulSetOrdinals{Start: int32(rng.IntN(3))}
		}
		for range rng.IntN(4) {
			set.Spec.VolumeClaimTemplates = append(set.Spec.VolumeClaimTemplates,
				abi.PersistentVolumeClaim{Metadata: abi.ObjectMeta{Name: pick("data", "", "logs", "data-a", "a")}})
		}
		in := &abi.ReconcileRequest{Subject: abi.SubjectStatefulSet, StatefulSet: &abi.StatefulSetSubject{Set: set}}
		for range rng.IntN(12) {
			ord := pick("0", "1", "2", "3", "7", "01", "-1", "4294967296", "x")
			name := pick("data", "", "logs", "data-a", "a", "b") + "-" + pick(setName, "web", "a-web", "") + "-" + ord
			in.StatefulSet.Claims = append(in.StatefulSet.Claims, abi.PersistentVolumeClaim{
				Metadata: abi.ObjectMeta{Name: name, UID: fmt.Sprint(len(in.StatefulSet.Claims))}})
			if rng.IntN(2) == 0 {
				in.StatefulSet.Pods = append(in.StatefulSet.Pods, abi.Pod{Metadata: abi.ObjectMeta{Name: setName + "-" + ord}})
			}
		}
		req, err := sdk.NewRequest(in)
		if err != nil {
			t.Fatal(err)
		}
		wantIn, wantCondemned := byName(req, set)
		gotIn, gotCondemned := replicas(req, set)
		if !slices.EqualFunc(wantIn, gotIn, sameReplica) || !slices.EqualFunc(wantCondemned, gotCondemned, sameReplica) {
			t.Fatalf("case %d, set %q, templates %+v, claims %+v:\nby name %+v %+v\ngot     %+v %+v", i, setName,
				set.Spec.VolumeClaimTemplates, in.StatefulSet.Claims, wantIn, wantCondemned, gotIn, gotCondemned)
		}
	}
}

// sameReplica compares replicas by the objects they point to.
func sameReplica(a, b replica) bool {
	return a.ordinal == b.ordinal && a.pod == b.pod && slices.Equal(a.claims, b.claims)
}
