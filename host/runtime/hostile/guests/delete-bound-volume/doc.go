// Command delete-bound-volume is a hostile guest: for every CSI
// PersistentVolume, whatever its phase and reclaim policy, it asks for the
// backing volume to be deleted, then deletes the volume's claim and the
// PersistentVolume. Only a Released volume with reclaim policy Delete whose
// claim is gone may lose its backing volume.
package main
