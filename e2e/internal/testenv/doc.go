// Package testenv is what the end-to-end tests share: building the kubeplug
// binary and guest modules from this checkout, starting `kubeplug run` as a
// separate process against the control plane, reading its metrics, and
// waiting for conditions.
package testenv
