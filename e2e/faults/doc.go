// Package faults is issue 24's fault campaign on the real control plane:
// seeded, replayable runs of `kubeplug run` with the retention, reclaim and
// templateupdate modules under a workload of scale-ups, scale-downs, set,
// claim and volume deletions and template changes, while the host is
// SIGKILLed, two hosts' leader is killed or cut off the API server, the API
// server is cut off every host or restarted (a new kube-apiserver on the
// same etcd), watches are broken, the CSI driver fails,
// times out or answers slowly, and a second writer races on the claims'
// labels. After each run it checks, from the API server and the driver,
// that no claim the policies keep was deleted, no backing volume leaked, no
// volume was deleted twice or while its claim existed, every StatefulSet's
// claims are as KEP-1847 and KEP-4650 require, and nothing is written once
// the load stops. e2e/README.md says how to run and replay it.
package faults
