// Command finalizer-flood is a hostile guest: for every StatefulSet it adds
// 9,000 distinct finalizers to the set's first claim, one action each. Carried
// out one PATCH per action, each carrying the whole growing list, they cost
// the host gigabytes.
package main
