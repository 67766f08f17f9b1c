package dataplane

// Door is an optional policy interface: admission at the door of a wall-clock driver. A
// server that can refuse a request before it reads and decodes its body sheds overload
// cheaply; it asks the policy, now and then on the driver's goroutine, whether a request of
// app arriving at `at` (≥ now) could still be served by its deadline given what is already
// queued and reserved.
//
// Door must be side-effect free: it decides nothing and changes no policy state (the request
// does not exist yet). admit=false means such a request would surely be dropped by the
// policy; reason is the drop reason the policy would give, and retryAfter the earliest time
// at which a fresh arrival could be admitted again (the door stays closed until then unless
// the driver asks again). A policy that cannot tell answers admit=true: the driver then
// relies on its own estimate and on the policy's drops after admission, which decide from
// the request's true arrival time (Arrival.At).
type Door interface {
	Door(v View, app AppID, at, now Time) (admit bool, reason DropReason, retryAfter Time)
}
