package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kubeplug/kubeplug/abi"
)

// ownResponse is ownStrings for a decoded Response, the hot path of every
// hook call: the same checks in the same order, the same errors, but a walk
// written out for the wire types instead of one found by reflection, and one
// allocation for the strings of each action instead of one per string. A
// string equal to the one at the same place in the previous action (the
// same type, kind, namespace and owner in a hundred actions alike) is that
// string, checked and copied once. A string the host keeps (an event's
// message in the event sink's cache) keeps at most one action's strings
// alive with it, never the output buffer.
//
// TestOwnResponseIsOwnStrings holds the two walks to the same answers for
// every string field the wire types have, so a field added to them and not
// here fails the test.
func ownResponse(r *abi.Response) *fieldError {
	var p strPass
	if err := ownGroup(&p, &r.Message, ownOne); err != nil {
		return err.in("message")
	}
	if res := r.Result; res != nil {
		for i := range res.Actions {
			if err := ownGroup(&p, &res.Actions[i], actionStrings); err != nil {
				return err.in("[" + strconv.Itoa(i) + "]").in("actions").in("result")
			}
		}
		if err := ownGroup(&p, &res.Message, ownOne); err != nil {
			return err.in("message").in("result")
		}
	}
	if a := r.Admit; a != nil {
		if err := ownGroup(&p, a, admitStrings); err != nil {
			return err.in("admit")
		}
	}
	return nil
}

// strPass is the state of ownGroup's two passes over a group of strings:
// the first checks each and adds up the bytes of those it must copy, the
// second copies those into one allocation and points each at its copy.
type strPass struct {
	second bool
	size   int
	copy   strings.Builder
	// prev are the previous group's strings, owned, in the order visited
	// (map entries left out: their order changes from pass to pass); cur
	// collects this group's in the second pass; k counts the visits.
	prev, cur []string
	k         int
}

// ownGroup checks the strings visit visits in v and gives them one
// allocation.
func ownGroup[T any](p *strPass, v *T, visit func(*strPass, *T) *fieldError) *fieldError {
	p.second, p.size, p.k = false, 0, 0
	if err := visit(p, v); err != nil {
		return err
	}
	p.second, p.k, p.cur = true, 0, p.cur[:0]
	p.copy = strings.Builder{}
	p.copy.Grow(p.size)
	visit(p, v) // the second pass fails nothing
	p.prev, p.cur = p.cur, p.prev
	return nil
}

// ownOne is the visit of a single string.
func ownOne(p *strPass, s *string) *fieldError { return p.str(s) }

// str visits a string outside a map.
func (p *strPass) str(s *string) *fieldError {
	k := p.k
	p.k++
	if k < len(p.prev) && *s == p.prev[k] {
		if p.second {
			*s = p.prev[k]
			p.cur = append(p.cur, *s)
		}
		return nil
	}
	err := p.own(s)
	if p.second {
		p.cur = append(p.cur, *s)
	}
	return err
}

// own checks s in the first pass and copies it in the second.
func (p *strPass) own(s *string) *fieldError {
	if !p.second {
		if err := checkString(*s); err != nil {
			return err
		}
		p.size += len(*s)
		return nil
	}
	if *s != "" {
		// The builder never outgrows the size it was given, so every
		// string cut from it shares its one array; and it only appends, so
		// the bytes behind a string cut earlier never change.
		start := p.copy.Len()
		p.copy.WriteString(*s)
		*s = p.copy.String()[start:]
	}
	return nil
}

// checkString is the check ownStrings makes of every string.
func checkString(s string) *fieldError {
	switch {
	case len(s) > maxStringBytes:
		return &fieldError{msg: fmt.Sprintf("a string of %d bytes, more than the limit of %d", len(s), maxStringBytes)}
	case !utf8.ValidString(s):
		return &fieldError{msg: "invalid UTF-8"}
	}
	return nil
}

func (p *strPass) strs(s []string) *fieldError {
	for i := range s {
		if err := p.str(&s[i]); err != nil {
			return err.in("[" + strconv.Itoa(i) + "]")
		}
	}
	return nil
}

// strMap visits a map's keys and values; the second pass replaces the map,
// whose keys cannot be changed in place.
func (p *strPass) strMap(m *map[string]string) *fieldError {
	if *m == nil {
		return nil
	}
	if !p.second {
		for k, v := range *m {
			if err := p.own(&k); err != nil {
				return err.in("[key]")
			}
			if err := p.own(&v); err != nil {
				return err.in("[" + strconv.Quote(k) + "]")
			}
		}
		return nil
	}
	owned := make(map[string]string, len(*m))
	for k, v := range *m {
		p.own(&k)
		p.own(&v)
		owned[k] = v
	}
	*m = owned
	return nil
}

// The visits below name each field as it is on the wire, in the order of
// the struct's fields (ownStrings's order, so that of two bad strings the
// same one is reported).

func actionStrings(p *strPass, a *abi.Action) *fieldError {
	if err := p.str(&a.Type); err != nil {
		return err.in("type")
	}
	if err := refStrings(p, &a.Target); err != nil {
		return err.in("target")
	}
	if o := a.OwnerReferences; o != nil {
		if err := p.strs(o.Remove); err != nil {
			return err.in("remove").in("ownerReferences")
		}
		for i := range o.Add {
			if err := ownerStrings(p, &o.Add[i]); err != nil {
				return err.in("[" + strconv.Itoa(i) + "]").in("add").in("ownerReferences")
			}
		}
	}
	if err := p.str(&a.Finalizer); err != nil {
		return err.in("finalizer")
	}
	if c := a.Claim; c != nil {
		if err := claimStrings(p, c); err != nil {
			return err.in("claim")
		}
	}
	if s := a.ClaimUpdateStatus; s != nil {
		if err := claimUpdateStrings(p, s); err != nil {
			return err.in("claimUpdateStatus")
		}
	}
	if v := a.Volume; v != nil {
		if err := volumeStrings(p, v); err != nil {
			return err.in("volume")
		}
	}
	if e := a.Event; e != nil {
		if err := eventStrings(p, e); err != nil {
			return err.in("event")
		}
	}
	return nil
}

func refStrings(p *strPass, r *abi.ObjectRef) *fieldError {
	if err := p.str(&r.Kind); err != nil {
		return err.in("kind")
	}
	if err := p.str(&r.Namespace); err != nil {
		return err.in("namespace")
	}
	if err := p.str(&r.Name); err != nil {
		return err.in("name")
	}
	if err := p.str(&r.UID); err != nil {
		return err.in("uid")
	}
	return nil
}

func ownerStrings(p *strPass, r *abi.OwnerReference) *fieldError {
	if err := p.str(&r.APIVersion); err != nil {
		return err.in("apiVersion")
	}
	if err := p.str(&r.Kind); err != nil {
		return err.in("kind")
	}
	if err := p.str(&r.Name); err != nil {
		return err.in("name")
	}
	if err := p.str(&r.UID); err != nil {
		return err.in("uid")
	}
	return nil
}

func claimStrings(p *strPass, c *abi.ClaimApply) *fieldError {
	if err := p.strMap(&c.Labels); err != nil {
		return err.in("labels")
	}
	if err := p.strMap(&c.Annotations); err != nil {
		return err.in("annotations")
	}
	if r := c.Resources; r != nil {
		if err := p.strMap(&r.Requests); err != nil {
			return err.in("requests").in("resources")
		}
		if err := p.strMap(&r.Limits); err != nil {
			return err.in("limits").in("resources")
		}
	}
	if s := c.VolumeAttributesClassName; s != nil {
		if err := p.str(s); err != nil {
			return err.in("volumeAttributesClassName")
		}
	}
	return nil
}

func claimUpdateStrings(p *strPass, s *abi.VolumeClaimUpdateStatus) *fieldError {
	for i := range s.VolumeClaimTemplates {
		t := &s.VolumeClaimTemplates[i]
		if err := p.str(&t.TemplateName); err != nil {
			return err.in("templateName").in("[" + strconv.Itoa(i) + "]").in("volumeClaimTemplates")
		}
		if err := p.strMap(&t.TotalCapacity); err != nil {
			return err.in("totalCapacity").in("[" + strconv.Itoa(i) + "]").in("volumeClaimTemplates")
		}
	}
	for i := range s.Conditions {
		if err := conditionStrings(p, &s.Conditions[i]); err != nil {
			return err.in("[" + strconv.Itoa(i) + "]").in("conditions")
		}
	}
	return nil
}

func conditionStrings(p *strPass, c *abi.Condition) *fieldError {
	if err := p.str(&c.Type); err != nil {
		return err.in("type")
	}
	if err := p.str(&c.Status); err != nil {
		return err.in("status")
	}
	if err := p.str(&c.Reason); err != nil {
		return err.in("reason")
	}
	if err := p.str(&c.Message); err != nil {
		return err.in("message")
	}
	if err := p.str(&c.LastTransitionTime); err != nil {
		return err.in("lastTransitionTime")
	}
	return nil
}

func volumeStrings(p *strPass, v *abi.VolumeDelete) *fieldError {
	if err := p.str(&v.Driver); err != nil {
		return err.in("driver")
	}
	if err := p.str(&v.VolumeHandle); err != nil {
		return err.in("volumeHandle")
	}
	if s := v.Secrets; s != nil {
		if err := p.str(&s.Namespace); err != nil {
			return err.in("namespace").in("secrets")
		}
		if err := p.str(&s.Name); err != nil {
			return err.in("name").in("secrets")
		}
	}
	return nil
}

func eventStrings(p *strPass, e *abi.Event) *fieldError {
	if err := p.str(&e.Type); err != nil {
		return err.in("type")
	}
	if err := p.str(&e.Reason); err != nil {
		return err.in("reason")
	}
	if err := p.str(&e.Message); err != nil {
		return err.in("message")
	}
	return nil
}

func admitStrings(p *strPass, a *abi.AdmitResponse) *fieldError {
	if err := p.str(&a.Message); err != nil {
		return err.in("message")
	}
	if err := p.str(&a.Reason); err != nil {
		return err.in("reason")
	}
	if err := p.strs(a.Warnings); err != nil {
		return err.in("warnings")
	}
	for i := range a.Patch {
		op := &a.Patch[i]
		if err := p.str(&op.Op); err != nil {
			return err.in("op").in("[" + strconv.Itoa(i) + "]").in("patch")
		}
		if err := p.str(&op.Path); err != nil {
			return err.in("path").in("[" + strconv.Itoa(i) + "]").in("patch")
		}
		if err := p.str(&op.From); err != nil {
			return err.in("from").in("[" + strconv.Itoa(i) + "]").in("patch")
		}
	}
	return nil
}
