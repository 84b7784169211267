// Command requeue-1ms is a hostile guest: it does nothing but ask to be
// reconciled again after one millisecond, every time, to keep a worker busy.
package main
