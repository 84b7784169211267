// Command empty-actions is a hostile guest: for every call it returns 100,000
// empty actions. An empty action is one byte on the wire, so the result is
// 100 KB, well under the default output limit of 1 MiB; decoded naively, each
// costs the host a whole action.
//
// It speaks the ABI without the SDK, writing its response by hand: the SDK's
// encoder writes every required field, and cannot write an empty action.
package main
