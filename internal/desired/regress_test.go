package desired

// regressionFiles are the inputs of the regression tests, also seeds of the
// fuzz targets.
var regressionFiles = []string{
	"version: 1\nroutes:\n  - ~\n",
}
