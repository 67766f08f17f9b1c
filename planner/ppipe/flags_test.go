package ppipe

import "testing"

// The recorded replicas value -1 (the authors' K^(P-D)) is a typed option in Options and
// records back as -1; counts pass through as they are.
func TestFlagsReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recorded  int
		replicas  int
		perLength bool
		valid     bool
	}{
		{1, 1, false, true},
		{0, 0, false, true},
		{4, 4, false, true},
		{-1, 0, true, true},
		{9, 9, false, false},
		{-2, -2, false, false},
	} {
		f := DefaultFlags()
		f.Replicas = tc.recorded
		o := f.Options()
		if o.Replicas != tc.replicas || o.ReplicasPerLength != tc.perLength {
			t.Errorf("recorded %d: Replicas %d, ReplicasPerLength %v; want %d, %v", tc.recorded, o.Replicas, o.ReplicasPerLength, tc.replicas, tc.perLength)
		}
		if back := o.flags().Replicas; back != tc.recorded {
			t.Errorf("recorded %d: records back as %d", tc.recorded, back)
		}
		if err := o.validate(); (err == nil) != tc.valid {
			t.Errorf("recorded %d: Validate() = %v, want valid %v", tc.recorded, err, tc.valid)
		}
	}
	both := DefaultOptions()
	both.Replicas, both.ReplicasPerLength = 2, true
	if both.validate() == nil {
		t.Error("Replicas 2 with ReplicasPerLength accepted")
	}
	for _, c := range []struct {
		cfg  spaceConfig
		want int
	}{{spaceConfig{P: 3}, 1}, {spaceConfig{P: 3, replicas: 3}, 3}, {spaceConfig{P: 3, perLength: true}, 4}} {
		if got := c.cfg.replicaCount(2, 1); got != c.want {
			t.Errorf("%+v: replicaCount(K=2, D=1) = %d, want %d", c.cfg, got, c.want)
		}
	}
}
