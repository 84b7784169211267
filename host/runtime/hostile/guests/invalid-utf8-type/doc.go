// Command invalid-utf8-type is a hostile guest: for every StatefulSet it returns
// one action whose type is not valid UTF-8. Used as a Prometheus label value,
// such a string made client_golang panic and the live host exit with status 2.
package main
