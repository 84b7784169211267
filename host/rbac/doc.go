// Package rbac derives the least-privilege RBAC rules a host needs from
// what it is configured to run: the informers it starts, the capabilities
// each module is granted (the manifest's, checked against allow:), each
// module's subject and namespaces, and the host's own needs (its Warning
// events, the leader Lease, the namespaces an admission webhook reads, the
// Secret it keeps its webhook certificate in, the Pod and ReplicaSet it
// reads to find the Deployment those two belong to). `kubeplug rbac` prints the
// result as ClusterRoles, Roles and bindings, or as Helm values.
//
// Every rule is the mirror of a call the host makes: Derive names, beside
// each rule it adds, the code that makes the call, and the package's tests
// run that code against a recording client and check that every request it
// sends is covered. No rule uses "*".
//
// It imports abi and k8s.io/api's RBAC types; it must not import client-go:
// it computes, it talks to no API server.
package rbac
