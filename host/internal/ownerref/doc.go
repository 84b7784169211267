// Package ownerref holds the host's rule for the owner references a module
// may give an object: the garbage collector deletes a dependent when its
// owners are gone, so a reference is data that can be lost. The executor
// (host/actions) applies it to updateOwnerReferences actions and admission
// (host/admission) to the references an admit patch adds or changes, so that
// both paths hold a module to one rule.
//
// It imports abi and apimachinery's validation helpers only.
package ownerref
