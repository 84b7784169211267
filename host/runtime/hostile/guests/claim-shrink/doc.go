// Command claim-shrink is a hostile guest: it server-side applies a storage
// request of one byte to every claim of its StatefulSet, lower than any
// claim's current request. Under RecoverVolumeExpansionFailure the API server
// accepts a lower request while an expansion is in flight, which cancels it,
// a user's as well as a module's; the host refuses any apply that lowers a
// claim's request.
package main
