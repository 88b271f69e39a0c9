package daemon

import "github.com/netreconcile/netreconcile/internal/model"

// filterBeforeRead drops the event filter's snapshot when the configuration
// changed since it was built: until this pass has read the kernel and built
// one for the new file, every notification wakes (filter.go).
func (d *Daemon) filterBeforeRead() {
	if d.gen != d.filterGen {
		d.f.swap(nil)
	}
}

// filterAfterPass builds the filter's snapshot from the enforced
// configuration and what this pass read, and puts it in force.
func (d *Daemon) filterAfterPass(want *model.State) {
	have, owned := d.eng.lastRead()
	if have == nil {
		d.f.swap(nil)
		return
	}
	d.f.swap(buildWatchSet(want, have, owned))
	d.filterGen = d.gen
}
