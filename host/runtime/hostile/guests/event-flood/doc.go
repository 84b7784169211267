// Command event-flood is a hostile guest: for every StatefulSet it records
// one Warning event whose message is a million bytes, just under the default
// output limit of 1 MiB, so that the host's own bound on event messages,
// not the output limit, is what must stop it.
package main
