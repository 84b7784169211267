package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeplug/kubeplug/abi"
)

// ModuleFieldManager is the field manager of a declared module's generic
// writes: one of its own, so that what it applies is told apart from what
// another module, the host's typed writes (FieldManager) or a user wrote.
func ModuleFieldManager(module string) string { return "kubeplug/" + module }

// planGeneric plans a declared module's apply, applyStatus or create, a
// having passed Validate: the object as the module gave it, with the
// preconditions and the metadata the host writes. An apply carries the
// target's uid, which also keeps it from creating an object deleted since
// (the API server's apply would), and the resourceVersion this Result
// knows; a create carries the subject as its controller.
func (e *Executor) planGeneric(m abi.Manifest, req *abi.ReconcileRequest, a abi.Action, t Target, st *objectState) (*write, error) {
	obj := t.Body
	if obj == nil {
		return nil, fmt.Errorf("%s on %s: no object decoded by Validate", a.Type, t)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if t.Namespace != "" {
		meta["namespace"] = t.Namespace
	}
	w := &write{fieldManager: ModuleFieldManager(e.Module)}
	switch a.Type {
	case abi.ActionCreate:
		if t.Name != "" {
			meta["name"] = t.Name
		}
		kind, subject, ok := req.SubjectObject()
		if !ok || req.Declared == nil || req.Declared.Object == nil {
			return nil, refusal(a, t, "the reconcile input has no subject to own the object")
		}
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": req.Declared.Object.APIVersion, "kind": kind, "name": subject.Name, "uid": subject.UID,
			"controller": true, "blockOwnerDeletion": true,
		}}
		w.kind, w.desc = writeCreate, fmt.Sprintf("create with controller %s %s", kind, subject.Name)
	case abi.ActionApply, abi.ActionApplyStatus:
		meta["name"], meta["uid"] = t.Name, t.UID
		if st.rv != "" {
			meta["resourceVersion"] = st.rv
		}
		w.kind = writeApply
		if a.Type == abi.ActionApplyStatus {
			w.subresource = "status"
		} else {
			r, _, _ := declared(m, t.Kind)
			w.force = slices.ContainsFunc(m.Capabilities, func(c abi.Capability) bool { return c.Force && c.AllowsResource(abi.ActionApply, r, "") })
		}
		w.desc = fmt.Sprintf("server-side apply as %s (force=%t) with preconditions uid=%s resourceVersion=%s", w.fieldManager, w.force, t.UID, st.rv)
		if w.subresource != "" {
			w.desc += " to " + w.subresource
		}
	default:
		return nil, fmt.Errorf("no generic write for action type %q", a.Type)
	}
	var err error
	if w.data, err = json.Marshal(obj); err != nil {
		return nil, err
	}
	return w, nil
}

// callGeneric makes a generic write. An apply that conflicts only with its
// own manager (its create's Update entry, which the API server keeps apart
// from its Apply entry) is made again forcing: it takes nothing from anyone
// else, and without it a module could never change what it created.
func (e *Executor) callGeneric(ctx context.Context, t Target, st *objectState, w *write) error {
	switch w.kind {
	case writeCreate:
		_, _, err := e.Cluster.Create(ctx, t.Kind, t.Namespace, w.data, w.fieldManager)
		return err
	case writeApply:
		rv, err := e.Cluster.Apply(ctx, t.Kind, t.Namespace, t.Name, w.data, w.fieldManager, w.force, w.subresource)
		if err != nil && !w.force && onlyConflictsWith(err, w.fieldManager) {
			w.desc += ", again forcing over its own create's fields"
			rv, err = e.Cluster.Apply(ctx, t.Kind, t.Namespace, t.Name, w.data, w.fieldManager, true, w.subresource)
		}
		if err != nil {
			return err
		}
		st.rv, st.written = rv, true
		return nil
	}
	return fmt.Errorf("unknown generic write kind %d", w.kind)
}

// onlyConflictsWith reports whether err is an apply conflict whose every
// cause is a field that manager owns: "conflict with \"MANAGER\"", then
// nothing, " using VERSION" or " with subresource …", as the API server
// words them.
func onlyConflictsWith(err error, manager string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	if len(causes) == 0 {
		return false
	}
	for _, c := range causes {
		rest, ok := strings.CutPrefix(c.Message, "conflict with ")
		if c.Type != metav1.CauseTypeFieldManagerConflict || !ok {
			return false
		}
		name, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return false
		}
		if got, _ := strconv.Unquote(name); got != manager {
			return false
		}
		if after := rest[len(name):]; after != "" && !strings.HasPrefix(after, " ") {
			return false
		}
	}
	return true
}
