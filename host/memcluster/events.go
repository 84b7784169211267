package memcluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeplug/kubeplug/abi"
)

// Event is an Event recorded through RecordEvent.
type Event struct {
	InvolvedObject abi.ObjectRef
	Type           string
	Reason         string
	Message        string
	// Source is the reporting component, "kubeplug/<module>".
	Source string
	// Count is how many identical events were recorded.
	Count          int
	FirstTimestamp time.Time
	LastTimestamp  time.Time
}

// sameAs reports whether e and o are the same event as client-go's recorder
// aggregates them: same object, type, reason, message and source.
func (e Event) sameAs(o Event) bool {
	return e.InvolvedObject == o.InvolvedObject && e.Type == o.Type && e.Reason == o.Reason &&
		e.Message == o.Message && e.Source == o.Source
}

// RecordEvent implements actions.Cluster. An event identical to one already
// recorded increments that one's Count and LastTimestamp instead of adding
// another. The type must be Normal or Warning, as the API server requires.
func (c *Cluster) RecordEvent(ctx context.Context, target abi.ObjectRef, eventType, reason, message, module string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if eventType != abi.EventNormal && eventType != abi.EventWarning {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, reason, field.ErrorList{
			field.NotSupported(field.NewPath("type"), eventType, []string{abi.EventNormal, abi.EventWarning}),
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	ev := Event{
		InvolvedObject: target,
		Type:           eventType,
		Reason:         reason,
		Message:        message,
		Source:         fmt.Sprintf("kubeplug/%s", module),
		Count:          1,
		FirstTimestamp: now,
		LastTimestamp:  now,
	}
	for i := range c.events {
		if c.events[i].sameAs(ev) {
			c.events[i].Count++
			c.events[i].LastTimestamp = now
			return nil
		}
	}
	c.events = append(c.events, ev)
	return nil
}

// Events returns the distinct events recorded so far, in the order they were
// first recorded.
func (c *Cluster) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}
