// Command unknown-types is a hostile guest: for every call it returns 40,000
// actions, each of a distinct action type no host knows. Counted by type, they
// became 40,000 metric series in the live host.
//
// It speaks the ABI without the SDK, writing its response by hand: an action
// with only a type fits in 13 bytes, so the 40,000 stay under the default
// output limit of 1 MiB and reach the host's action checks.
package main
