package kernel

import "github.com/netreconcile/netreconcile/internal/model"

// RouteAction is what one write of a route batch does.
type RouteAction int

// Route batch actions: an exclusive add, a replace, a delete.
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
