// Command patch-copy-bomb is a hostile guest: its admit hook, with the
// narrowest mutate grant (a claim's /metadata/labels), answers a claim's
// creation with a patch that adds a 60 KB label and then copies the labels
// into themselves (config "copies", 24 by default), doubling them each time:
// every path lies inside the grant, and applied whole the patch would build
// a document of a terabyte. With {"churn": true} it copies the label and
// removes the copy instead, "copies" times: the object stays small while the
// bytes copied grow. The host holds a patch to its budget (operations, the
// bytes copies copy, the patched object's size, the work of applying it)
// and answers by the failure policy.
package main
