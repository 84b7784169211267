package podrun

import "fmt"

// The kubelet's Waiting reasons for what this runtime cannot do.
const (
	// ReasonImageNeverPull: the image is not on the node, and podrun
	// pulls none.
	ReasonImageNeverPull = "ErrImageNeverPull"
	// ReasonCreateContainerConfig: the pod asks for what podrun cannot
	// give the container (a volume type, an env source, a user).
	ReasonCreateContainerConfig = "CreateContainerConfigError"
	// ReasonCreateContainer: the pod's shape (containers, init
	// containers) or its image's files are beyond podrun.
	ReasonCreateContainer = "CreateContainerError"
	// ReasonRunContainer: the entrypoint could not be started.
	ReasonRunContainer = "RunContainerError"
)

// Error says why a pod's container cannot run here, and trying again
// will not change it: its Reason is the kubelet's Waiting reason, which
// the kubelet stand-in reports on the pod.
type Error struct {
	reason string
	err    error
}

func (e *Error) Error() string  { return e.err.Error() }
func (e *Error) Unwrap() error  { return e.err }
func (e *Error) Reason() string { return e.reason }

// refuse is an Error of reason.
func refuse(reason, format string, args ...any) *Error {
	return &Error{reason: reason, err: fmt.Errorf(format, args...)}
}
