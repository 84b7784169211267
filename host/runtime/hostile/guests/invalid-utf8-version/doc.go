// Command invalid-utf8-version is a hostile guest whose manifest version is
// not valid UTF-8: the host labels its metrics with the version, and such a
// label value made client_golang panic.
package main
