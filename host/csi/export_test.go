package csi

import "google.golang.org/grpc/connectivity"

// ConnState is the state of the connection to driver, Shutdown when it has
// none: a test waits on it for gRPC to notice a server gone.
func ConnState(c *Client, driver string) connectivity.State {
	d := c.drivers[driver]
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return connectivity.Shutdown
	}
	return d.conn.GetState()
}
