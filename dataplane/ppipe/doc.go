// Package ppipe is PPipe's data plane (Kong, Xu, Hu, USENIX ATC '25): the deployment a
// PPipe-style plan describes (FromPlan: one app per model, one stage per partition, vGPU
// slices packed onto the plan's cluster), the central reservation-based adaptive batching
// dispatcher (§5.4, Algorithm 1 with its probe of Algorithm 2, and the two refinements of
// the authors' artifact), Algorithm 1 as printed, and the reactive per-pool baseline of the
// ablation (§7.4). Every policy handles EvCancel and forgets retired requests
// (dataplane.Forgetter), so its state follows what is in flight.
//
// The dispatcher books busy-until by default, as the authors' simulator does; that
// simulator gives every pool servers of its own. Where FromPlan must share a server between
// pools (the cluster has no room to start each on a fresh one), that server's NICs fill
// gaps instead, so a transfer booked behind one pool's long first stage does not hold back
// another pool's nearer ones.
package ppipe
