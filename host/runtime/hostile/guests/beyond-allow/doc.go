// Command beyond-allow is a hostile guest whose manifest asks for every
// action on every resource, and which uses it: for every StatefulSet it deletes
// a StorageClass, a claim and a pod of its input, and the StatefulSet itself.
// An operator's allow: narrower than that must keep it from loading; in shadow
// mode it must write nothing.
package main
