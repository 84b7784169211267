// Package ocitest holds what tests of signed artifacts share: key pairs
// in the files kubeplug and cosign read. Only tests import it.
package ocitest
