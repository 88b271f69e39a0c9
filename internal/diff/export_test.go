package diff

import "github.com/netreconcile/netreconcile/internal/model"

// Compute is ComputeWith without inputs beyond the two states: the tests'
// shorthand (the engine always passes its inputs).
func Compute(desired, actual *model.State) (*Plan, error) {
	return ComputeWith(desired, actual, Inputs{})
}
