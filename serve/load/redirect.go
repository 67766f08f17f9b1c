package load

import (
	"fmt"
	"net/http"
)

// refuseRedirect is every load client's CheckRedirect: a benchmark measures the server it was
// pointed at, so a 3xx answer is an error naming where it pointed, never a request sent on to
// another host (which could be off loopback, or a server the user never chose to load).
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("redirect to %q refused: plan load sends requests only to the URL it was given", req.URL.Redacted())
}
