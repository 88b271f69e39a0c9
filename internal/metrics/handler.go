package metrics

import (
	"net/http"
	"strconv"
)

// ServeHTTP serves the registry's families in the text format, to GET and
// HEAD. The whole answer is gathered before anything is written, so a
// collector's mistake is a 500 with its reason, never a truncated page.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	fams, err := r.gather()
	if err != nil {
		http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body := appendText(nil, fams)
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}
