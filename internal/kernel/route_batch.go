package kernel

import "github.com/netreconcile/netreconcile/internal/model"

// RouteAction is what one write of a route batch does.
type RouteAction int

// Route batch actions, as AddRoute, ReplaceRoute and DeleteRoute.
const (
	RouteAdd RouteAction = iota
	RouteReplace
	RouteDelete
)

// RouteWrite is one write of a route batch.
type RouteWrite struct {
	Action RouteAction
	Route  *model.Route
}

// writeRoutesOneByOne is WriteRoutes for kernels without a batch path.
func writeRoutesOneByOne(w Writer, ws []RouteWrite, protocol int) []error {
	errs := make([]error, len(ws))
	for i, x := range ws {
		switch x.Action {
		case RouteAdd:
			errs[i] = w.AddRoute(x.Route, protocol)
		case RouteReplace:
			errs[i] = w.ReplaceRoute(x.Route, protocol)
		case RouteDelete:
			errs[i] = w.DeleteRoute(x.Route)
		}
	}
	return errs
}
