package policy

import (
	"testing"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/sdktest"
)

// policies are the four combinations of whenDeleted and whenScaled.
var policies = []struct{ name, whenDeleted, whenScaled string }{
	{"Retain-Retain", "Retain", "Retain"},
	{"whenDeleted=Delete", "Delete", "Retain"},
	{"whenScaled=Delete", "Retain", "Delete"},
	{"Delete-Delete", "Delete", "Delete"},
}

// desired is KEP-1847's table as upstream implements it: whether the set and
// whether the pod must own a claim, by policy and by whether the claim's
// replica is condemned (outside [start, start+replicas)).
func desired(whenDeleted, whenScaled string, condemned bool) (setOwns, podOwns bool) {
	switch {
	case whenDeleted == "Retain" && whenScaled == "Retain":
		return false, false
	case whenDeleted == "Delete" && whenScaled == "Retain":
		return true, false
	case whenDeleted == "Retain" && whenScaled == "Delete":
		return false, condemned
	default:
		return !condemned, condemned
	}
}

// What a claim's existing references are, for the expectations.
type refState int

const (
	ours   refState = iota // none, or references to the set or pod: the policy applies
	old                    // a reference naming the set or pod with another uid: leave alone
	others                 // another controller: only our references go
)

var states = []struct {
	name  string
	kind  refState
	start func(set *abi.StatefulSet, pod *abi.Pod) []abi.OwnerReference
}{
	{"no reference", ours, func(*abi.StatefulSet, *abi.Pod) []abi.OwnerReference { return nil }},
	{"set controller", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(ctrl(s)) }},
	{"pod controller", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(ctrl(p)) }},
	{"set controller and pod owner", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(ctrl(s), plain(p)) }},
	{"pod controller and set owner", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(plain(s), ctrl(p)) }},
	{"old-style set owner", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(plain(s)) }},
	{"old-style pod owner", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(plain(p)) }},
	{"old-style set and pod owners", ours, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(plain(s), plain(p)) }},
	{"set reference with an earlier uid", old, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(stale(ctrl(s))) }},
	{"pod reference with an earlier uid", old, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(stale(ctrl(p))) }},
	{"old-style set owner with an earlier uid", old, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(stale(plain(s))) }},
	{"another controller", others, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(foreign) }},
	{"another controller and old-style set owner", others, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(foreign, plain(s)) }},
	{"another controller and old-style pod owner", others, func(s *abi.StatefulSet, p *abi.Pod) []abi.OwnerReference { return refs(plain(p), foreign) }},
}

// TestDecisionTable runs every policy, for a replica in range and a condemned
// one, from every kind of existing references, with and without an unrelated
// owner reference that must survive untouched.
func TestDecisionTable(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		for _, condemned := range []bool{false, true} {
			position := "in range"
			if condemned {
				position = "condemned"
			}
			for _, st := range states {
				for _, extra := range []bool{false, true} {
					name := p.name + "/" + position + "/" + st.name
					if extra {
						name += "/plus unrelated owner"
					}
					t.Run(name, func(t *testing.T) {
						// Scaled from 3 to 2: web-2 is condemned and not yet deleted.
						set := sdktest.StatefulSet("web", 2, sdktest.Retention(p.whenDeleted, p.whenScaled))
						pods := []*abi.Pod{sdktest.Pod(set, 0), sdktest.Pod(set, 1), sdktest.Pod(set, 2)}
						ordinal := 1
						if condemned {
							ordinal = 2
						}
						pod := pods[ordinal]
						start := st.start(set, pod)
						if extra {
							start = append(start, unrelated)
						}
						claim := sdktest.Claim("data", set, ordinal, sdktest.OwnedBy(start...))
						name := claim.Metadata.Name

						out := run(t, h, sdktest.Request(now, set, pods, claim))

						var want []abi.OwnerReference
						var conflict bool
						switch st.kind {
						case ours:
							setOwns, podOwns := desired(p.whenDeleted, p.whenScaled, condemned)
							if setOwns {
								want = append(want, ctrl(set))
							}
							if podOwns {
								want = append(want, ctrl(pod))
							}
							if extra {
								want = append(want, unrelated)
							}
						case old:
							want = start
						case others:
							for _, r := range start {
								if r.UID != set.Metadata.UID && r.UID != pod.Metadata.UID {
									want = append(want, r)
								}
							}
							// Upstream warns when it comes to clean the claim up, and
							// a foreign controller is a conflict only under a
							// policy that would delete.
							conflict = len(want) < len(start) && (p.whenDeleted == "Delete" || p.whenScaled == "Delete")
						}
						out.wantRefs(t, name, want...)
						if sameRefs(start, want) {
							out.wantWritten(t)
						} else {
							out.wantWritten(t, name)
						}
						if conflict {
							out.wantConflicts(t, name)
						} else {
							out.wantConflicts(t)
						}
					})
				}
			}
		}
	}
}

// TestSteadyState: a set whose claims already carry what the policy asks
// gets no action at all, whatever the policy.
func TestSteadyState(t *testing.T) {
	h := sdktest.New(t)
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			set := sdktest.StatefulSet("web", 2, sdktest.Retention(p.whenDeleted, p.whenScaled), sdktest.Templates("data", "logs"))
			args := []any{set}
			for ord := 0; ord < 3; ord++ {
				pod := sdktest.Pod(set, ord)
				setOwns, podOwns := desired(p.whenDeleted, p.whenScaled, ord == 2)
				var owners []abi.OwnerReference
				if setOwns {
					owners = append(owners, ctrl(set))
				}
				if podOwns {
					owners = append(owners, ctrl(pod))
				}
				args = append(args, pod, sdktest.Claim("data", set, ord, sdktest.OwnedBy(owners...)),
					sdktest.Claim("logs", set, ord, sdktest.OwnedBy(owners...)))
			}
			if res := h.MustReconcile(sdktest.Request(now, args...)); len(res.Actions) != 0 {
				t.Errorf("actions = %+v, want none", res.Actions)
			}
		})
	}
}
