package casetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/host/admission"
	"github.com/kubeplug/kubeplug/host/controller"
	"github.com/kubeplug/kubeplug/host/memcluster"
)

// runAdmission reviews an admission case's request once, through the
// function the live webhook server calls (admission.Reviewer.Review), with
// the case's objects as the host's caches, and checks the answer.
func (o *Outcome) runAdmission(ctx context.Context, mod controller.Module, c Case, log *slog.Logger) error {
	m := mod.Runtime.Manifest()
	admitter, ok := mod.Runtime.(admission.Admitter)
	if m.Admission == nil || !ok {
		return fmt.Errorf("module %q has no admit hook, but the case has admit:: run it against a module built for ABI 1.1 with sdk.Module.Admit", m.Name)
	}
	cluster := memcluster.New(memcluster.Config{Now: func() time.Time { return c.Now }})
	if err := cluster.Load(c.Objects...); err != nil {
		return fmt.Errorf("load objects: %w", err)
	}
	req, err := admissionRequest(c.Admit)
	if err != nil {
		return err
	}
	granted := mod.Allowed
	if granted == nil {
		granted = m.Capabilities
	}
	r := &admission.Reviewer{
		Lister:          cluster,
		NamespaceLabels: func(string) (map[string]string, error) { return c.Admit.NamespaceLabels, nil },
		Logger:          log,
		Now:             func() time.Time { return c.Now },
	}
	am := &admission.Module{Name: mod.Name, Admitter: admitter, Granted: granted, Config: mod.Config}
	out := r.Review(ctx, am, req, 0)
	if out.Failure != nil {
		// The live host would answer by the failure policy; a case checks
		// the module, so its failure fails the case, saying why.
		return fmt.Errorf("admission failed: %w", out.Failure)
	}
	return checkAdmission(c.Expect, out)
}

// checkAdmission compares an admission's answer with a case's expectations.
func checkAdmission(e Expect, out *admission.Outcome) error {
	resp := out.Response
	message := ""
	if resp.Result != nil {
		message = resp.Result.Message
	}
	if *e.Allowed != resp.Allowed {
		if resp.Allowed {
			return errors.New("allowed: the request was allowed, want denied")
		}
		return fmt.Errorf("allowed: the request was denied (%q), want allowed", message)
	}
	if e.Message != "" && !strings.Contains(message, e.Message) {
		return fmt.Errorf("message: %q does not contain %q", message, e.Message)
	}
	if e.Warnings != nil {
		want, got := make([]any, len(e.Warnings)), make([]any, len(resp.Warnings))
		for i, w := range e.Warnings {
			want[i] = w
		}
		for i, w := range resp.Warnings {
			got[i] = w
		}
		if d := diff("warnings", want, got, true); d != "" {
			return errors.New(d)
		}
	}
	if e.Object != nil {
		if out.Object == nil {
			return errors.New("object: the request has no object after the review (denied, or a DELETE)")
		}
		var got map[string]any
		if err := json.Unmarshal(out.Object, &got); err != nil {
			return fmt.Errorf("object: decode the patched object: %w", err)
		}
		if d := diff("object", jsonable(e.Object), got, true); d != "" {
			return errors.New(d)
		}
	}
	return nil
}

// admissionRequest builds the AdmissionRequest the API server would send
// for a case's request.
func admissionRequest(a *AdmitRequest) (*admissionv1.AdmissionRequest, error) {
	obj := a.Object
	if obj == nil {
		obj = a.OldObject
	}
	kind, _ := obj["kind"].(string)
	info := abi.KindOf(kind)
	gv, err := schema.ParseGroupVersion(info.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("admit: kind %s: %w", kind, err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("case-" + strings.ToLower(a.Operation) + "-" + name),
		Kind:      metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind},
		Resource:  metav1.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: info.Resource},
		Name:      name,
		Namespace: ns,
		Operation: admissionv1.Operation(a.Operation),
		UserInfo:  authenticationv1.UserInfo{Username: a.Username, Groups: a.Groups},
		DryRun:    &a.DryRun,
	}
	req.RequestKind, req.RequestResource = &req.Kind, &req.Resource
	for _, o := range []struct {
		from map[string]any
		into *runtime.RawExtension
	}{{a.Object, &req.Object}, {a.OldObject, &req.OldObject}} {
		if o.from == nil {
			continue
		}
		b, err := json.Marshal(o.from)
		if err != nil {
			return nil, fmt.Errorf("admit: encode object: %w", err)
		}
		o.into.Raw = b
	}
	return req, nil
}
