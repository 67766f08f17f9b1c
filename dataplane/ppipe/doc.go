// Package ppipe is PPipe's data plane (Kong, Xu, Hu, USENIX ATC '25): the deployment a
// PPipe-style plan describes (FromPlan: one app per model, one stage per partition, vGPU
// slices packed onto the plan's cluster), the central reservation-based adaptive batching
// dispatcher (§5.4, Algorithm 1 with its probe of Algorithm 2, and the two refinements of
// the authors' artifact), Algorithm 1 as printed, and the reactive per-pool baseline of the
// ablation (§7.4). Every policy handles EvCancel and forgets retired requests
// (dataplane.Forgetter), so its state follows what is in flight.
package ppipe
