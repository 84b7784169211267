// Package admission serves modules' admit hooks as Kubernetes admission
// webhooks: it decodes AdmissionReviews (k8s.io/api/admission/v1), builds the
// module's AdmitRequest from the request and the host's caches, calls the
// module, holds its patch to the operator's allow: list, applies it to the
// object and holds the owner references it adds to the executor's rule
// (host/internal/ownerref) before answering, and answers with the module's
// failure policy when anything of that fails. Review is the one function that
// does this, for the live webhook server and for `kubeplug test` alike.
//
// It imports abi, the snapshot builder (for the related objects and the
// projections), the owner-reference rule and k8s.io/api types; it must not
// import host/runtime (it holds a module through the Admitter interface), the
// controller or the executor.
package admission
