// Package sdk is what a kubeplug guest module imports: one registration entry
// point, the request and result types, constructors for every action of the
// ABI, and helpers for the Kubernetes conventions policies need (claim and pod
// names, ordinals, quantities, owner references).
//
// A guest is a package main whose init function registers the module:
//
//	func main() {}
//
//	func init() {
//		sdk.Register(sdk.Module{
//			Name: "example", Version: "0.1.0", Subject: abi.SubjectStatefulSet,
//			Capabilities: []abi.Capability{{Action: abi.ActionEvent, Resources: []string{"statefulsets"}}},
//			Reconcile: func(req *sdk.Request) (sdk.Result, error) { return sdk.Result{}, nil },
//		})
//	}
//
// A module may instead (or also) admit objects at the API server (ABI 1.1):
// set Admit, an AdmitFunc answering with Allow, Deny or a patch
// (Admission.Patch), and Admission, the rules the host's webhook
// configuration is generated from; the host serves it as an admission webhook.
//
// Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o example.wasm .
//
// The same code runs natively in tests through package sdk/sdktest, and
// against the compiled module when KUBEPLUG_TEST_WASM names it.
//
// sdk imports only the standard library and abi (encoding/json only to decode
// the module configuration and to encode patch values). It must stay TinyGo-compatible and must never
// import k8s.io/* or anything from the host: guests link it.
package sdk
