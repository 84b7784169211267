// Command named-secret is a hostile guest: for every CSI PersistentVolume it
// asks for the backing volume to be deleted and names, in VolumeDelete.Secrets,
// the Secret whose data the host should hand to the driver: a Secret of its
// choosing, from its configuration ({"secret": {"namespace": "...", "name":
// "..."}}), by default kube-system/hostile-chosen. The secrets of a DeleteVolume
// are the host's to resolve, never the module's to name.
package main
