// Command owner-unrelated is a hostile guest: it makes a claim of its
// StatefulSet a dependent of an object that is neither the set nor one of its
// pods, so that the garbage collector deletes the claim when that object goes
// (or at once, when no such object exists). Its configuration says which:
//
//	{"owner": "pod", "pod": {"name": "other-0", "uid": "..."}}  a Pod of another StatefulSet
//	{"owner": "storageclass"}                                   the claim's StorageClass
package main
