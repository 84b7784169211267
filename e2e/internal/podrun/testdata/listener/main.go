// Command listener is the process of podrun's test pods: it serves HTTP on
// $PORT, answering 200 while it can open a connection to the API server
// at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, 503 otherwise.
package main

import (
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	api := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		c, err := net.DialTimeout("tcp", api, time.Second)
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		c.Close()
	})
	os.Stderr.WriteString("listening on :" + os.Getenv("PORT") + "\n")
	if err := http.ListenAndServe(":"+os.Getenv("PORT"), nil); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
