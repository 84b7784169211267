package controller_test

import "time"

// testTimeout bounds waits for a condition; it is not a performance check.
const (
	testTimeout = 30 * time.Second
	pollEvery   = 10 * time.Millisecond
)
