package sdk

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubeplug/kubeplug/abi"
)

// Request is one reconcile's input with lookups over it. The accessors of
// the other subject return nil. A Request and the objects it returns belong
// to one call: do not keep them after Reconcile returns.
//
//	set := req.StatefulSet(); if set == nil { return sdk.Result{}, nil } // deleted
type Request struct {
	in *abi.ReconcileRequest

	// now is in.Now parsed, once nowParsed; nowErr is the parse's failure.
	// The handler parses it on the first call of Now rather than up front,
	// because in a guest time.Parse costs about as much as the rest of an
	// empty reconcile and most calls never look at the time.
	now       time.Time
	nowErr    error
	nowParsed bool

	// Indexes into the request's slices, built on first lookup. The maps
	// outlive a reset of the handler's Request, so that a module that looks
	// claims up does not allocate them again every call.
	claims        map[string]int
	pods          map[int]int // by ordinal
	claimsIndexed bool
	podsIndexed   bool
}

// NewRequest wraps a decoded request. It fails when the request's now is set
// but is not an RFC 3339 time. Guests get their Request from the SDK; tests
// of a module's helpers may build one here.
func NewRequest(in *abi.ReconcileRequest) (*Request, error) {
	r := &Request{in: in}
	if r.Now(); r.nowErr != nil {
		return nil, r.nowErr
	}
	return r, nil
}

// reset makes r the Request for in, keeping the memory of its indexes.
func (r *Request) reset(in *abi.ReconcileRequest) {
	*r = Request{in: in, claims: r.claims, pods: r.pods}
}

// parseNow parses in.Now into now, or records why it cannot.
func (r *Request) parseNow() {
	r.nowParsed = true
	if r.in.Now == "" {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, r.in.Now)
	if err != nil {
		r.nowErr = badNow(r.in.Now)
		return
	}
	r.now = t
}

// badNow is the error for a request whose now is not an RFC 3339 time.
func badNow(now string) error { return fmt.Errorf("%w: now %q", ErrBadNow, now) }

// plausibleNow reports whether now is empty or starts like an RFC 3339 time
// ("2006-01-02T15:04:05" and one more byte), without parsing it: the handler
// refuses other values at once, and leaves the rest of the check to the parse
// in Now. It is written without a loop or a call because in a guest each of
// those costs more than the comparisons.
func plausibleNow(s string) bool {
	if s == "" {
		return true
	}
	return len(s) >= 20 &&
		digit(s[0]) && digit(s[1]) && digit(s[2]) && digit(s[3]) && s[4] == '-' &&
		digit(s[5]) && digit(s[6]) && s[7] == '-' && digit(s[8]) && digit(s[9]) && s[10] == 'T' &&
		digit(s[11]) && digit(s[12]) && s[13] == ':' && digit(s[14]) && digit(s[15]) && s[16] == ':' &&
		digit(s[17]) && digit(s[18])
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// Raw returns the request as it came over the wire.
func (r *Request) Raw() *abi.ReconcileRequest { return r.in }

// Subject returns the subject kind (abi.SubjectStatefulSet, ...).
func (r *Request) Subject() string { return r.in.Subject }

// Key returns the subject's "namespace/name", or "name" when cluster-scoped.
func (r *Request) Key() string { return r.in.Key }

// Namespace returns the namespace part of Key, empty when cluster-scoped.
func (r *Request) Namespace() string {
	ns, _, found := strings.Cut(r.in.Key, "/")
	if !found {
		return ""
	}
	return ns
}

// Name returns the name part of Key.
func (r *Request) Name() string {
	_, name, found := strings.Cut(r.in.Key, "/")
	if !found {
		return r.in.Key
	}
	return name
}

// Now returns the host's clock at the time of the request (the zero time if
// the request carried none). Guests must use it instead of time.Now. When the
// request's now is not an RFC 3339 time, Now returns the zero time and the
// SDK answers the call with a bad-input status, whatever the module returns.
func (r *Request) Now() time.Time {
	if !r.nowParsed {
		r.parseNow()
	}
	return r.now
}

// StatefulSet returns the subject StatefulSet, nil when it no longer exists or
// the subject is not a StatefulSet.
func (r *Request) StatefulSet() *abi.StatefulSet {
	if s := r.in.StatefulSet; s != nil {
		return s.Set
	}
	return nil
}

// Pods returns the pods whose controller is the subject StatefulSet.
func (r *Request) Pods() []abi.Pod {
	if s := r.in.StatefulSet; s != nil {
		return s.Pods
	}
	return nil
}

// Claims returns the claims named by the StatefulSet's templates, sorted by
// name, whatever their owner references say.
func (r *Request) Claims() []abi.PersistentVolumeClaim {
	if s := r.in.StatefulSet; s != nil {
		return s.Claims
	}
	return nil
}

// StorageClasses returns the classes the StatefulSet's templates and claims
// name.
func (r *Request) StorageClasses() []abi.StorageClass {
	if s := r.in.StatefulSet; s != nil {
		return s.StorageClasses
	}
	return nil
}

// ClaimUpdate returns the VolumeClaimUpdate in effect for the StatefulSet,
// if any: the oldest of those naming it (abi.StatefulSetSubject).
func (r *Request) ClaimUpdate() *abi.VolumeClaimUpdate {
	if s := r.in.StatefulSet; s != nil {
		return s.ClaimUpdate
	}
	return nil
}

// OtherClaimUpdates returns the VolumeClaimUpdates that name the
// StatefulSet too but are not in effect (ABI 1.4).
func (r *Request) OtherClaimUpdates() []abi.VolumeClaimUpdate {
	if s := r.in.StatefulSet; s != nil {
		return s.OtherClaimUpdates
	}
	return nil
}

// PersistentVolume returns the subject PersistentVolume, nil when it no
// longer exists or the subject is not a PersistentVolume.
func (r *Request) PersistentVolume() *abi.PersistentVolume {
	if s := r.in.PersistentVolume; s != nil {
		return s.Volume
	}
	return nil
}

// BoundClaim returns the claim the subject PersistentVolume's claimRef names,
// nil when there is none or its UID does not match claimRef.
func (r *Request) BoundClaim() *abi.PersistentVolumeClaim {
	if s := r.in.PersistentVolume; s != nil {
		return s.Claim
	}
	return nil
}

// Drivers returns the CSI drivers the host may delete volumes through.
func (r *Request) Drivers() []string {
	if s := r.in.PersistentVolume; s != nil {
		return s.Drivers
	}
	return nil
}

// Claim returns the claim named name, nil if the request has none.
func (r *Request) Claim(name string) *abi.PersistentVolumeClaim {
	claims := r.Claims()
	if !r.claimsIndexed {
		r.claimsIndexed = true
		if r.claims == nil {
			r.claims = make(map[string]int, len(claims))
		} else {
			clear(r.claims)
		}
		for i := range claims {
			r.claims[claims[i].Metadata.Name] = i
		}
	}
	if i, ok := r.claims[name]; ok {
		return &claims[i]
	}
	return nil
}

// ClaimFor returns the claim of template for the replica with ordinal, nil if
// the request has none.
func (r *Request) ClaimFor(template string, ordinal int) *abi.PersistentVolumeClaim {
	return r.Claim(ClaimName(template, r.setName(), ordinal))
}

// Pod returns the StatefulSet's pod with ordinal, nil if the request has none.
func (r *Request) Pod(ordinal int) *abi.Pod {
	pods := r.Pods()
	if !r.podsIndexed {
		r.podsIndexed = true
		set := r.setName()
		if r.pods == nil {
			r.pods = make(map[int]int, len(pods))
		} else {
			clear(r.pods)
		}
		for i := range pods {
			if name, ord, ok := ParsePodName(pods[i].Metadata.Name); ok && name == set {
				r.pods[ord] = i
			}
		}
	}
	if i, ok := r.pods[ordinal]; ok {
		return &pods[i]
	}
	return nil
}

// StorageClass returns the class named name among the request's classes, nil
// if the request has none.
func (r *Request) StorageClass(name string) *abi.StorageClass {
	if s := r.in.PersistentVolume; s != nil && s.StorageClass != nil && s.StorageClass.Metadata.Name == name {
		return s.StorageClass
	}
	classes := r.StorageClasses()
	for i := range classes {
		if classes[i].Metadata.Name == name {
			return &classes[i]
		}
	}
	return nil
}

// setName is the StatefulSet's name, from the key when the set is gone: its
// pods and claims are still named after it.
func (r *Request) setName() string {
	if set := r.StatefulSet(); set != nil {
		return set.Metadata.Name
	}
	return r.Name()
}
