// Command requeue-huge is a hostile guest: on every call it asks to be
// reconciled again after 2^62 milliseconds, a delay that overflows a
// time.Duration (nanoseconds) by a factor of a million and, converted
// naively, may come out negative or tiny.
//
// It speaks the ABI without the SDK: the SDK takes the delay as a
// time.Duration and cannot express this one.
package main
