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
// written out for the wire types instead of one found by reflection, and the
// copies made in chunks of a few hundred bytes instead of one allocation per
// string (strArena). A string equal to the one at the same place in the
// previous action (the same type, kind, namespace and owner in a hundred
// actions alike) is that string, checked and copied once.
//
// TestOwnResponseIsOwnStrings holds the two walks to the same answers for
// every string field the wire types have, so a field added to them and not
// here fails the test.
func ownResponse(r *abi.Response) *fieldError {
	var p strPass
	if err := p.str(&r.Message); err != nil {
		return err.in("message")
	}
	if res := r.Result; res != nil {
		for i := range res.Actions {
			p.next()
			if err := actionStrings(&p, &res.Actions[i]); err != nil {
				return err.in("[" + strconv.Itoa(i) + "]").in("actions").in("result")
			}
		}
		if err := p.str(&res.Message); err != nil {
			return err.in("message").in("result")
		}
	}
	if a := r.Admit; a != nil {
		if err := admitStrings(&p, a); err != nil {
			return err.in("admit")
		}
	}
	return nil
}

// strPass is ownResponse's walk: the copies made so far, and the strings of
// the previous action and this one, in the order visited (map entries left
// out: a map is not visited in the same order twice).
type strPass struct {
	arena     strArena
	prev, cur []string
}

// next starts an action.
func (p *strPass) next() {
	p.prev, p.cur = p.cur, p.prev[:0]
}

// str checks and copies a string outside a map.
func (p *strPass) str(s *string) *fieldError {
	if k := len(p.cur); k < len(p.prev) && *s == p.prev[k] {
		*s = p.prev[k]
	} else if err := p.own(s); err != nil {
		return err
	}
	p.cur = append(p.cur, *s)
	return nil
}

// own checks a string and copies it.
func (p *strPass) own(s *string) *fieldError {
	if err := checkString(*s); err != nil {
		return err
	}
	*s = p.arena.clone(*s)
	return nil
}

// strArenaChunk is the size of strArena's allocations: a string the host
// keeps (an event's message in the event sink's cache) keeps at most this
// many bytes of other strings alive with it, never the output buffer.
const strArenaChunk = 512

// strArena copies strings into chunks of strArenaChunk bytes.
type strArena struct {
	b strings.Builder
}

func (a *strArena) clone(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) > strArenaChunk/4:
		return strings.Clone(s)
	case a.b.Cap()-a.b.Len() < len(s):
		// A new builder: the strings cut from the old one keep its array.
		a.b = strings.Builder{}
		a.b.Grow(strArenaChunk)
	}
	// The builder never outgrows the size it was given, so the strings
	// cut from it share its one array; and it only appends, so the bytes
	// behind a string cut earlier never change.
	start := a.b.Len()
	a.b.WriteString(s)
	return a.b.String()[start:]
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

// strMap checks and copies a map's keys and values into a new map (its
// keys cannot be changed in place).
func (p *strPass) strMap(m *map[string]string) *fieldError {
	if *m == nil {
		return nil
	}
	owned := make(map[string]string, len(*m))
	for k, v := range *m {
		if err := p.own(&k); err != nil {
			return err.in("[key]")
		}
		if err := p.own(&v); err != nil {
			return err.in("[" + strconv.Quote(k) + "]")
		}
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
