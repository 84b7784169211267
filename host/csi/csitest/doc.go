// Package csitest is a CSI plugin for tests: the CSI Identity and Controller
// services over volumes kept in memory, as csi-test's stateful mock driver
// did before it left csi-test. Serve serves them over gRPC on a unix socket;
// Identity and Controller hand them to another gRPC server, such as
// csi-test's driver package, whose gomock servers the end-to-end tests let
// delegate to them. The host's CSI client tests and the end-to-end tests
// drive it through the gRPC calls a CSI client makes, and inspect and steer
// it through Driver's methods: the volumes it has, the calls it received,
// failures and held answers of DeleteVolume.
//
// It is imported by test code only, but returns errors rather than taking a
// *testing.T, so that a TestMain can serve it too. It imports the standard
// library, the CSI spec's Go bindings and gRPC. It must not import testing,
// testify, client-go or any other host package.
package csitest
